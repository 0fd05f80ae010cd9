// Package simbench is the simulated benchmark: a test double of a real
// benchmark, generated from a seed, that lets skillfleet train, be tested
// and be load-tested with no network and no API key. Its partner is the
// simulated model in backends/sim; SIMULATOR.md specifies both.
//
// # The world
//
// A fixed catalogue of pitfalls ([Catalogue]) describes the ways the
// simulated target goes wrong. Each has a cue phrase that marks it in a
// question, a rule that prevents it (and paraphrases), keyword stems that
// show the rule is in a skill, a recognisable wrong answer, a vague line
// that hints at the topic without stating the rule, and a harmful rule: a
// tempting fix that breaks the pitfall's items even when the rule is there
// and that the simulated target also over-applies to a fixed share of the
// other questions ([SpillDraw]). In each broad category (format, reading)
// one pitfall is sweeping: its harmful rule reads like a rule for the
// whole category, the lure ([Lure]) the simulated optimizer falls for.
// [Platitudes] are wordy instructions that change nothing.
//
// [Generate] picks K active pitfalls for a preset and seed and writes items
// with 0-3 pitfalls each: a question quoting a record value and the cues of
// its pitfalls, and the record value as gold answer. [WriteSplits] writes
// them as train/val/test split files; [SeedSkill] is the weak initial skill
// a training run starts from, [ReferenceSkill] one that covers every active
// pitfall.
//
// # The environment
//
// [Env] asks the target model one question per episode, with the skill in
// the system message between "<skill>" and "</skill>" lines, and scores the
// answer by exact match. The trajectory ends with an evaluation message
// naming the gold answer, as real benchmarks give.
//
// The coverage helpers ([Covered], [Harmful], [IdentifyPitfall],
// [PitfallsInQuestion], [SpillDraw], [Lure]) are what the simulated model
// uses; nothing outside the sim packages may rely on them.
package simbench
