package prompts

// SamplePayload is samplePayload for the external tests.
var SamplePayload = samplePayload
