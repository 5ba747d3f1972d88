package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Args are the plugin's args in the KubeSchedulerConfiguration:
//
//	pluginConfig:
//	- name: Wasm
//	  args:
//	    guestURL: file:///path/to/guest.wasm
//	    callTimeout: 100ms
type Args struct {
	// GuestURL is the guest module: a path, a file:// URL or an http(s):// URL (fetched once at start).
	GuestURL string `json:"guestURL"`
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages (default 1024 = 64 MiB).
	MemoryLimitPages uint32 `json:"memoryLimitPages,omitempty"`
	// CallTimeout is the deadline of one guest call; a call past it is stopped and fails (default 100ms).
	CallTimeout metav1.Duration `json:"callTimeout,omitempty"`
	// PoolSize is the most instances alive at once (default 16, the scheduler's default parallelism).
	PoolSize int `json:"poolSize,omitempty"`
	// Trusted drops the per-call deadline: the guest is compiled without termination checks and called
	// without wazero's per-call watcher goroutine (about 1 µs less per call). A guest that never returns
	// then hangs the scheduler, so set it only for a guest you wrote and tested; callTimeout is ignored.
	Trusted bool `json:"trusted,omitempty"`
	// Env is the guest's environment (e.g. GOGC for a Go guest). GOMEMLIMIT defaults to 3/4 of the
	// memory limit, so a Go guest collects harder before it runs out.
	Env map[string]string `json:"env,omitempty"`
}

const (
	DefaultMemoryLimitPages = 1024
	DefaultCallTimeout      = 100 * time.Millisecond
	DefaultPoolSize         = 16
	pageSize                = 64 << 10
	maxGuestBytes           = 256 << 20
	fetchTimeout            = 30 * time.Second
)

// decodeArgs reads the args the scheduler hands an out-of-tree plugin: *runtime.Unknown holding JSON
// (or YAML). Unknown fields are an error, so a typo fails at start instead of being ignored.
func decodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	var raw []byte
	switch o := obj.(type) {
	case nil:
	case *runtime.Unknown:
		raw = o.Raw
		if o.ContentType == runtime.ContentTypeYAML {
			j, err := yaml.YAMLToJSON(raw)
			if err != nil {
				return a, fmt.Errorf("args: %w", err)
			}
			raw = j
		} else if o.ContentType != "" && o.ContentType != runtime.ContentTypeJSON {
			return a, fmt.Errorf("args: unsupported content type %q", o.ContentType)
		}
	default:
		j, err := json.Marshal(obj)
		if err != nil {
			return a, fmt.Errorf("args of type %T: %w", obj, err)
		}
		raw = j
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		var withMeta struct {
			Args
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&withMeta); err != nil {
			return a, fmt.Errorf("args: %w", err)
		}
		a = withMeta.Args
	}
	return a, a.complete()
}

// complete applies the defaults and checks the values.
func (a *Args) complete() error {
	if a.GuestURL == "" {
		return fmt.Errorf("args: guestURL is required (a path, file:// or http(s):// URL of the guest .wasm)")
	}
	if a.MemoryLimitPages == 0 {
		a.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if a.MemoryLimitPages > 65536 {
		return fmt.Errorf("args: memoryLimitPages %d is over 65536 (4 GiB, the wasm32 maximum)", a.MemoryLimitPages)
	}
	if a.CallTimeout.Duration == 0 {
		a.CallTimeout.Duration = DefaultCallTimeout
	}
	if a.CallTimeout.Duration < 0 {
		return fmt.Errorf("args: callTimeout %v is negative", a.CallTimeout.Duration)
	}
	if a.PoolSize == 0 {
		a.PoolSize = DefaultPoolSize
	}
	if a.PoolSize < 0 {
		return fmt.Errorf("args: poolSize %d is negative", a.PoolSize)
	}
	return nil
}

// loadGuest reads the guest's bytes from a path, a file:// URL or an http(s):// URL.
func loadGuest(ctx context.Context, where string) ([]byte, error) {
	u, err := url.Parse(where)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // "C:\..." is a path too
		return readFile(where)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("guest %s: a file URL must name a local path (file:///path)", where)
		}
		return readFile(u.Path)
	case "http", "https":
		ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
		if err != nil {
			return nil, fmt.Errorf("guest %s: %w", where, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("guest %s: %w", where, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("guest %s: HTTP %s", where, resp.Status)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxGuestBytes+1))
		if err != nil {
			return nil, fmt.Errorf("guest %s: %w", where, err)
		}
		if len(b) > maxGuestBytes {
			return nil, fmt.Errorf("guest %s: larger than %d MiB", where, maxGuestBytes>>20)
		}
		return b, nil
	}
	return nil, fmt.Errorf("guest %s: unsupported URL scheme %q (use a path, file://, http:// or https://)",
		where, u.Scheme)
}

func readFile(path string) ([]byte, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("guest: empty path")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	return b, nil
}
