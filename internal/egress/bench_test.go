package egress

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// BenchmarkTunnel measures a CONNECT through the proxy: setting one up
// (auth, rules, dial) and carrying 8 MiB down it, against the same
// download straight from the server.
func BenchmarkTunnel(b *testing.B) {
	const size = 8 << 20
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, size)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { c.Write(payload); c.Close() }()
		}
	}()
	target := l.Addr().String()
	p, err := New(Config{Resolver: newResolver(nil), Registries: []string{target}, MaxConnsPerTask: 1000,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(pl)
	defer p.Close()
	g, _ := p.Grant("bench", nil)
	auth := base64.StdEncoding.EncodeToString([]byte(g.TaskID + ":" + g.Token))
	through := func() (io.Reader, net.Conn) {
		c, err := net.Dial("tcp", pl.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n", target, auth)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("CONNECT: %v %v", resp, err)
		}
		return br, c
	}
	direct := func() (io.Reader, net.Conn) {
		c, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		return c, c
	}
	for _, bc := range []struct {
		name string
		open func() (io.Reader, net.Conn)
	}{{"direct", direct}, {"proxy", through}} {
		b.Run("setup/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				_, c := bc.open()
				c.Close()
			}
		})
		b.Run("download/"+bc.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				r, c := bc.open()
				if n, err := io.Copy(io.Discard, r); err != nil || n != size {
					b.Fatalf("read %d, %v", n, err)
				}
				c.Close()
			}
		})
	}
}
