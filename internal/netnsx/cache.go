package netnsx

import (
	"container/list"
	"sync"
)

// NetlinkCache is how many namespaces' netlink sockets stay open at once
// (see Named). Opening one again costs a socket and two setns calls, tens
// of microseconds; holding one costs a descriptor, and a network of
// 10 000 nodes cannot hold 10 000 more under a hard limit of 20 000.
const NetlinkCache = 1024

// netlinkCache is the least-recently-used list of open netlink handles,
// front the most recent. Lock order: a handles' mu, then the cache's mu,
// then (TryLock only) another handles' mu, so a handle in use is never
// closed and two users never wait for each other.
type netlinkCache struct {
	mu  sync.Mutex
	lru list.List // of *handles
	max int
}

// cacheEntry is a namespace's place in the netlink cache.
type cacheEntry struct{ elem *list.Element }

var cache = &netlinkCache{max: NetlinkCache}

// use records that h's netlink handle (open, h.mu held) was just used,
// and closes the least recently used others beyond the cache's size
// (those not in use: one in use stays, and the cache is over its size
// until it is free again).
func (c *netlinkCache) use(h *handles) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.cached == nil {
		h.cached = &cacheEntry{elem: c.lru.PushFront(h)}
	} else {
		c.lru.MoveToFront(h.cached.elem)
	}
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.max; {
		prev := e.Prev()
		if v := e.Value.(*handles); v != h && v.mu.TryLock() {
			c.lru.Remove(e)
			v.cached = nil
			v.nl.Close()
			v.nl = nil
			v.mu.Unlock()
		}
		e = prev
	}
}

// drop takes h (h.mu held, its netlink handle about to close) out of the
// cache.
func (c *netlinkCache) drop(h *handles) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.cached != nil {
		c.lru.Remove(h.cached.elem)
		h.cached = nil
	}
}

// openNetlink reports how many netlink handles are open (for tests).
func (c *netlinkCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
