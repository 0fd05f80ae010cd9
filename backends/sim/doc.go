// Package sim is the simulated model: a deterministic test double of both
// the target LLM and the optimizer LLM, over the simulated benchmark in
// pkg/bench/simbench. Every test, the demo and the load tests run against it,
// because no machine here reaches a hosted model. SIMULATOR.md specifies it.
//
// # What it owns
//
// [Model] implements llm.Model in-process. [Server] serves a Model in the
// OpenAI Chat Completions wire format, with optional latency, rate limits
// (429 with Retry-After) and injected faults, so the real HTTP client path
// is exercised too; [Listen], [Serve] and [ListenAndServe] run it.
//
// # What it must never do
//
// It reads only what a real model would read: the request's messages,
// model name and seed. Its replies depend on nothing else (not on call
// order, time or other requests), so runs are reproducible. It never
// invents an answer to a request it cannot read: a missing, unknown or
// malformed optimizer payload fails with llm.KindInvalidRequest (HTTP 400)
// naming the request kind. Nothing outside the sim packages may
// special-case it.
//
// # How data enters and leaves
//
// A target request is the sim benchmark's prompt: the skill between
// "<skill>" and "</skill>" lines of the system message and a question in
// the last user message. The reply is a sentence and <answer>…</answer>:
// right iff the skill states the rule of every pitfall the question cues,
// no harmful rule breaks one and no harmful rule spills over onto the
// question, else the characteristic wrong answer of the first pitfall
// that goes wrong. Noise (Options.Epsilon) flips the
// outcome, and a skill longer than Options.LengthBudget tokens gets its
// rules applied less reliably; both are drawn from a generator seeded by
// the question, the skill's hash, the request seed and the model name.
//
// An optimizer request carries its input as the last ```json fence of the
// last user message, whose "kind" names the prompt (pkg/prompts). The
// reply is a sentence and a fenced JSON object in the prompt's reply type.
// Analysts recognise the pitfall behind each wrong answer and propose the
// rule (replacing a vague line when there is one), or the deletion of a
// harmful rule they have recognised; with probability Options.HarmfulRate
// a proposal is harmful or irrelevant instead, and an edit the payload
// lists as rejected is proposed again only with probability
// Options.ReproposeRate (and the least support). Merges de-duplicate and
// sum support; ranking keeps the best-supported items within the budget;
// slow update, meta skill, rewrite and consolidation return text in their
// schemas.
//
// # What makes the mechanisms matter
//
// SIMULATOR.md asks that the gate, the rejected-edit buffer and the
// learning-rate budget each visibly pay off. Each answers a failure of the
// optimizer that the sim reproduces, as a real model's would be:
//
//   - Harmful rules cost much, and are hard to see. A harmful rule breaks
//     its pitfall's items and is over-applied to a fixed share
//     (Options.HarmSpill, 0.6) of the other questions. An analyst takes a
//     harmful line for the skill's rule on its topic and blames the agent
//     for the failures, seeing through it by itself only with
//     Options.DiagnoseRate per reply; it deletes the line at once when the
//     meta skill names it or the step buffer lists it as rejected. So a
//     harmful rule that gets in tends to stay, and only the gate keeps it
//     out: without the gate the final skill often holds one.
//   - Some mistakes are tempting and sticky. The broad categories (format,
//     reading) each have a lure ([simbench.Lure]): a harmful rule that
//     reads like one rule for all of the category's slips. An analyst that
//     sees two kinds of such slips at once proposes the lure instead of the
//     fixes, with their summed support, so ranking puts it first; every
//     analyst does so until its payload lists the lure as rejected (then
//     it returns only with probability r and support 1) or the meta skill
//     names it. Success analysts propose it too, as a generalisation of
//     rules that worked. Without the step buffer each step's candidate
//     carries the lure and fails the gate, and the epoch is lost.
//   - More room invites guesses. A failure analyst whose budget far
//     exceeds what its failures support pads its reply, as a model asked
//     for "at most N edits" does: floor(q * spare slots) guesses, at most
//     three, each a wordy platitude or a harmful rule, with support 1. At
//     the default budget (4) there is no padding and ranking clips
//     support-1 mistakes; at 50 every guess enters the candidate, which then
//     fails the gate or, let in, harms the skill.
//   - Platitudes are wordy (about 40 tokens), so letting them in costs
//     skill length and, past Options.LengthBudget, accuracy; success
//     analysts delete them when compressing.
//
// The epoch-level mechanisms have their part: the meta skill names the
// harmful rules behind an epoch's regressed and persistent failures, and
// the slow update states the rules of the pitfalls behind them, keeping
// earlier guidance that the rest of the skill does not state.
// scripts/mechanisms.sh measures the ablations.
package sim
