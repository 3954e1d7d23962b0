package zkserver

// SetLaidOutHook runs f with the election ports of each start's layout,
// before its members are launched; the returned func removes it.
func SetLaidOutHook(f func(electPorts []int)) (remove func()) {
	testHookLaidOut = func(c *Cluster) {
		ports := make([]int, len(c.members))
		for i, m := range c.members {
			ports[i] = m.electPort
		}
		f(ports)
	}
	return func() { testHookLaidOut = nil }
}
