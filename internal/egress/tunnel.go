package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// pipe copies a tunnel's bytes both ways: client to upstream (up) and
// back (down). A side that finishes sending half-closes the other's
// write, so a request can end while its answer still flows; an error on
// either side ends both; nothing moving either way for idle ends both.
// reason says why it ended, when not because both sides finished.
func pipe(client net.Conn, fromClient io.Reader, upstream net.Conn, idle time.Duration) (up, down int64, reason string) {
	touch := func() {
		d := time.Now().Add(idle)
		_ = client.SetDeadline(d)
		_ = upstream.SetDeadline(d)
	}
	touch()
	var (
		wg      sync.WaitGroup
		downErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		down, downErr = copyTouching(client, upstream, touch)
		end(client, upstream, downErr)
	}()
	up, upErr := copyTouching(upstream, fromClient, touch)
	end(upstream, client, upErr)
	wg.Wait()
	return up, down, endReason(upErr, downErr)
}

// end finishes one direction: on a clean end its destination's write
// side closes, on an error both connections do, which ends the other
// direction too.
func end(dst, src net.Conn, err error) {
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// endReason says what cut a tunnel short: the idle timeout, or the first
// error that was not the other direction closing the connection.
func endReason(errs ...error) string {
	for _, err := range errs {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "idle timeout"
		}
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err.Error()
		}
	}
	return ""
}

// copyTouching copies src to dst, calling touch whenever bytes arrive.
func copyTouching(dst io.Writer, src io.Reader, touch func()) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		nr, rerr := src.Read(buf)
		if nr > 0 {
			touch()
			nw, werr := dst.Write(buf[:nr])
			n += int64(nw)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// meteredConn counts a forwarded request's bytes and gives each read and
// write the idle timeout.
type meteredConn struct {
	net.Conn
	idle     time.Duration
	up, down atomic.Int64
}

func (c *meteredConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	n, err := c.Conn.Read(b)
	c.down.Add(int64(n))
	return n, err
}

// Write counts the bytes before they go: the answer to them, and the
// reading of the count that follows it, may come before Write returns.
func (c *meteredConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(c.idle))
	c.up.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	c.up.Add(int64(n - len(b)))
	return n, err
}
