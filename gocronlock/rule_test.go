package gocronlock_test

import (
	"errors"
	"testing"

	"github.com/tierlock/tierlock/gocronlock"
)

func TestNodeName(t *testing.T) {
	seen := map[string]string{}
	for _, key := range []string{"a", "a/b", "a%2Fb", ".", "..", "...", "%2E", "über", "x y", "main.job.func1"} {
		name, err := gocronlock.NodeName(key)
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%q and %q both map to %q", prev, key, name)
		}
		seen[name] = key
		if name == "." || name == ".." {
			t.Errorf("%q maps to %q, a relative segment", key, name)
		}
	}
	for _, key := range []string{"", string(make([]byte, gocronlock.MaxKeyLen+1))} {
		if _, err := gocronlock.NodeName(key); !errors.Is(err, gocronlock.ErrInvalidKey) {
			t.Errorf("key of %d bytes: %v, want ErrInvalidKey", len(key), err)
		}
	}
}
