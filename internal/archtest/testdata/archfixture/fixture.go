// Package archfixture is the code TestCodeFactsFromFixture reads: each
// kind of lock and go statement the architecture check names.
package archfixture

import (
	"io"
	"sync"
	"time"
)

type T struct {
	mu    sync.Mutex
	inner struct {
		rw sync.RWMutex
	}
	sync.Mutex
	p *sync.RWMutex
	n int
}

var global = struct {
	mu sync.Mutex
	m  map[int]int
}{m: map[int]int{}}

var plain sync.Mutex

func (t *T) run() {}

func helper[X any](X) {}

func start(t *T, r io.Reader) {
	go t.run()                // T.run
	go func() {}()            // start
	go io.Copy(io.Discard, r) // start
	f := t.run
	go f()          // start
	go helper(1)    // helper
	go (t.run)()    // T.run
	go background() // background
	time.AfterFunc(time.Second, t.run)
}

func background() {}
