// Package await runs a go-zookeeper request, whose methods take no
// context, so that its caller can stop waiting when a context ends: the
// command line's requests and gocronlock's reads and writes of run nodes
// share it.
package await

import "context"

// Call runs req on a goroutine of its own and returns its result, or
// ctx's cause as soon as ctx ends. go-zookeeper cannot cancel a request: an
// abandoned one completes in the background, its reply or the failure
// that closing the connection gives every pending request ending its
// goroutine, and the buffered channel lets it end without a reader.
func Call[T any](ctx context.Context, req func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := req()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}
