package dispatch

// Add makes d one of s's dispatchers until the returned func is called,
// as Run does for a dispatcher with [Options.Sweeper].
func (s *Sweeper) Add(d *Dispatcher) (remove func()) { return s.add(d) }
