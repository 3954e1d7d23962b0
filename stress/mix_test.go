package main

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/tierlock/tierlock/stress/internal/proto"
)

func TestMixFlag(t *testing.T) {
	c, err := parseFlags([]string{"-mix", "tier:2,curator:1,kazoo,gozk:1,tier:1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Procs != 6 || !slices.Equal(c.Impls, []proto.Impl{proto.Mix}) {
		t.Fatalf("procs %d, impls %v", c.Procs, c.Impls)
	}
	var got []proto.Impl
	for slot := range c.Procs {
		got = append(got, c.ImplOf(proto.Mix, slot))
	}
	if want := []proto.Impl{"tier", "tier", "tier", "curator", "kazoo", "gozk"}; !slices.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	if c.ImplOf(proto.Tier, 3) != proto.Tier {
		t.Fatal("implOf of a plain run")
	}
	if _, err := parseFlags([]string{"-mix", "tier:2,gozk:2", "-procs", "4"}, io.Discard); err != nil {
		t.Fatalf("-procs equal to the mix's total: %v", err)
	}
	for _, args := range [][]string{
		{"-mix", "tier:0"},
		{"-mix", "tier:x"},
		{"-mix", "cobol:1"},
		{"-mix", "tier:1,gozk:1", "-procs", "4"},
		{"-mix", "tier:1", "-impl", "gozk"},
		{"-mix", "tier:1", "-fault", "drop"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
