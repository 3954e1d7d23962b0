package faultproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/tierlock/tierlock/internal/faultproxy"
)

func Example() {
	// A one-connection echo server standing in for ZooKeeper.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()

	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	buf := make([]byte, 5)
	c.Write([]byte("hello"))
	io.ReadFull(c, buf)
	fmt.Printf("echo: %s\n", buf)

	p.Pause()
	c.Write([]byte("later"))
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(buf)
	fmt.Println("paused, read timed out:", errors.Is(err, os.ErrDeadlineExceeded))

	p.Resume()
	c.SetReadDeadline(time.Time{})
	io.ReadFull(c, buf)
	fmt.Printf("resumed: %s\n", buf)

	p.DropAll()
	_, err = c.Read(buf)
	fmt.Println("dropped:", err != nil)

	p.Close()
	<-served
	// Output:
	// echo: hello
	// paused, read timed out: true
	// resumed: later
	// dropped: true
}
