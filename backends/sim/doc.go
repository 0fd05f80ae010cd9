// Package sim is the simulated model: a deterministic test double of both
// the target LLM and the optimizer LLM, over the simulated benchmark in
// pkg/bench/sim. Every test, the demo and the load tests run against it,
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
// right iff the skill states the rule of every pitfall the question cues
// and no harmful rule breaks one, else the characteristic wrong answer of
// the first pitfall that goes wrong. Noise (Options.Epsilon) flips the
// outcome, and a skill longer than Options.LengthBudget tokens gets its
// rules applied less reliably; both are drawn from a generator seeded by
// the question, the skill's hash, the request seed and the model name.
//
// An optimizer request carries its input as the last ```json fence of the
// last user message, whose "kind" names the prompt (pkg/prompts). The
// reply is a sentence and a fenced JSON object in the prompt's reply type.
// Analysts recognise the pitfall behind each wrong answer and propose the
// rule (replacing a vague line when there is one), or the deletion of a
// harmful rule; with probability Options.HarmfulRate a proposal is harmful
// or irrelevant instead, and an edit the payload lists as rejected is
// proposed again only with probability Options.ReproposeRate. Merges
// de-duplicate and sum support; ranking keeps the best-supported items
// within the budget; slow update, meta skill, rewrite and consolidation
// return text in their schemas.
package sim
