// Package closed holds the module's one closed channel: what a method
// returns where its channel must be ready at once (a nil receiver's Lost or
// Done, a context that carries no hold, a session already closed).
package closed

// Chan is a closed channel.
var Chan <-chan struct{} = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
