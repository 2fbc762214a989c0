package afpacket

// PollFD returns the port's receiving socket, for a caller that serves
// many ports from one thread and waits for all of them at once (epoll)
// instead of calling Wait on each: the socket is readable while the RX
// ring holds a frame. It is -1 once the port is closed; the caller must
// not close it.
func (p *Port) PollFD() int { return p.rxFD }
