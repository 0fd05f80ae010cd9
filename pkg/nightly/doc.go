// Package nightly is the deployment-time half of SkillOpt ("SkillOpt-Sleep")
// for skillfleet: it harvests a user's own agent transcripts (Claude Code,
// Codex, Cursor), mines the recurring tasks in them, judges replies to those
// tasks, edits the learned block of a skill document, stages a night's
// proposal and adopts it into the live files.
//
// # What it owns
//
// Harvest ([Harvest]) reads transcripts read-only into [Digest]s, dropping
// meta prompts, headless engine sessions and sub-agent sessions and
// redacting secret-shaped strings ([Redact]) before any text leaves it.
// Mining ([MineHeuristic], [MineLLM]) turns digests into [Task]s with a
// judge; [Judge] scores a reply (rule checks, exact reference, or an LLM
// rubric). [ApplyEdits] edits only the learned block between its markers;
// for a skill package ([ReadPackage], a directory carried as its
// pkg/skillpkg bundle) [ApplyDocEdits] also creates or appends reference
// files, refusing every other file edit with a counted reason.
// [State] keeps the per-project cursors, the task archive and the night
// history in a state file written atomically under an exclusive lock.
// [DreamTasks] and [Recall] add train-only tasks of origin dream and
// recall (never val or test); [State.Learn] keeps the slow memory of gate
// decisions ([Lesson]); [FilterForSkill] keeps the tasks that exercise a
// named skill, and [ListSkills] and [AssignSkills] resolve each task to
// one skill of a skill root for a multi-skill night.
// [Stage] writes a night's proposal with a manifest pinning the live files'
// hashes (every file of a package directory); [Adopt] checks those pins and
// installs the proposal (a package as one tree, swapped in with one
// rename), and [Undo] reverts it. [Schedule] installs a crontab line or a systemd user timer.
//
// # What it must never do
//
// It never writes to a transcript, never lets a secret-shaped string reach
// a prompt, a staged file, the state file or a log, never touches the skill
// document outside the learned block (a package's reference files are only
// created or appended to), and never adopts over a live file that changed
// since staging, through a symlink, or outside the allowed roots.
// It imports nothing from coordinator or worker: the night's replay and
// consolidation driver lives in coordinator/sleep.
package nightly
