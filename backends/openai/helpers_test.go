package openai_test

import "fmt"

func sprintf(verb string, v any) string { return fmt.Sprintf(verb, v) }
