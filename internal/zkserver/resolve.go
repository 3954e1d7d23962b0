package zkserver

import (
	"context"
	"os"
	"strings"
	"time"
)

// EnvServers names the environment variable that points tests, examples and
// the stress command at an existing ZooKeeper server or ensemble
// (comma-separated host:port list) instead of starting one.
const EnvServers = "TIERLOCK_ZK_SERVERS"

// FromEnv returns a Cluster for the servers named by TIERLOCK_ZK_SERVERS, or
// false when the variable is unset or empty.
func FromEnv() (*Cluster, bool) {
	v := strings.TrimSpace(os.Getenv(EnvServers))
	if v == "" {
		return nil, false
	}
	var addrs []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return &Cluster{external: addrs}, len(addrs) > 0
}

// Resolve picks the servers a program uses: flagValue (a comma-separated
// host:port list from its -zk flag) if set, else TIERLOCK_ZK_SERVERS, else
// a standalone server started here. It returns the addresses, a function
// that stops what it started (a no-op otherwise), and where they came from.
func Resolve(ctx context.Context, flagValue string, opts ...Option) (servers []string, stop func(), source string, err error) {
	if flagValue != "" {
		return strings.Split(flagValue, ","), func() {}, "-zk", nil
	}
	if c, ok := FromEnv(); ok {
		return c.Addrs(), func() {}, EnvServers, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	c, err := Start(ctx, opts...)
	if err != nil {
		return nil, nil, "", err
	}
	return c.Addrs(), func() { c.Close() }, "started here", nil
}
