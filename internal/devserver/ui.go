package devserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI serves the Web UI on 127.0.0.1:port against the frontend and waits
// until it answers its health check. The caller has checked that the port is
// free: the UI server exits the process when it cannot bind.
func startUI(ctx context.Context, port int, frontend, namespace string) (*uiserver.Server, error) {
	ui := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Plain HTTP on loopback: the CSRF cookie must not require TLS.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true,
	}))
	// Start returning before Stop means the UI will never serve; the cause
	// ends the wait below at once.
	uctx, cancel := context.WithCancelCause(ctx)
	go func() { cancel(errors.Join(errUIExited, ui.Start())) }()

	health := "http://" + hostPort(port) + "/healthz"
	err := poll(uctx, "await ui", func(ctx context.Context) error { return checkHealth(ctx, health) })
	if err != nil {
		ui.Stop()
		return nil, err
	}
	return ui, nil
}

var errUIExited = errors.New("ui server exited")

func checkHealth(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ui health: status %d", resp.StatusCode)
	}
	return nil
}
