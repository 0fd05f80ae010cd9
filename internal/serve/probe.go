package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// BadURLError is a health URL that does not make a request.
type BadURLError struct{ Err error }

func (e BadURLError) Error() string { return e.Err.Error() }
func (e BadURLError) Unwrap() error { return e.Err }

// Probe GETs a health URL (a container's healthcheck) and returns the
// start of the answer's body. An answer other than 2xx is an error that
// names the URL, the status and that start; a URL that does not make a
// request is a [BadURLError].
func Probe(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, BadURLError{err}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %s %q", url, resp.Status, body)
	}
	return body, nil
}
