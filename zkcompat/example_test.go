package zkcompat_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierlock/tierlock/internal/zktest"
	"github.com/tierlock/tierlock/zkcompat"
)

// Eight goroutines, each with its own handle as code written for zk.Lock
// has it, take turns on one path; ZooKeeper sees one node of the process.
func ExampleNewLock() {
	conn, events, err := zkcompat.Connect(zktest.Addrs(), 10*time.Second, zk.WithLogInfo(false)) // was zk.Connect
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		for range events {
		}
	}()
	defer conn.Close()
	defer zkcompat.CloseConn(conn) // before the connection closes for good

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counter int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := zkcompat.NewLock(conn, "/example/zkcompat/job-42", zk.WorldACL(zk.PermAll)) // was zk.NewLock
			if err := l.Lock(); err != nil {
				fmt.Println(err)
				return
			}
			defer l.Unlock()
			select {
			case <-l.Lost(): // what zk.Lock cannot tell: stop working on the resource
				return
			default:
			}
			mu.Lock()
			counter++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println("holds:", counter)
	// Output: holds: 8
}
