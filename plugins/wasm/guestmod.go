package wasm

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// ABIVersion is the guest ABI this host speaks (the guest's abi_version export must return it).
const ABIVersion = 1

// export numbers the guest functions the host calls.
type export int

const (
	expABIVersion export = iota
	expCapabilities
	expPreFilter
	expFilter
	expScore
	expNormalizeScore
	numExports
)

var (
	i32, i64   = api.ValueTypeI32, api.ValueTypeI64
	cycleParam = []api.ValueType{i64}
)

// exportSpecs: name, signature and the capability bit that requires the export.
var exportSpecs = [numExports]struct {
	name            string
	params, results []api.ValueType
	capability      uint32
}{
	expABIVersion:     {"abi_version", nil, []api.ValueType{i32}, 0},
	expCapabilities:   {"capabilities", nil, []api.ValueType{i32}, 0},
	expPreFilter:      {"prefilter", cycleParam, []api.ValueType{i32}, capPreFilter},
	expFilter:         {"filter", cycleParam, []api.ValueType{i32}, capFilter},
	expScore:          {"score", cycleParam, []api.ValueType{i64}, capScore},
	expNormalizeScore: {"normalize_score", cycleParam, []api.ValueType{i32}, capNormalizeScore},
}

// Capability bits of the guest's capabilities export.
const (
	capPreFilter = 1 << iota
	capFilter
	capScore
	capNormalizeScore
	capAll = capPreFilter | capFilter | capScore | capNormalizeScore
)

const (
	hostModule = "kwokbench"
	wasiModule = wasi_snapshot_preview1.ModuleName
)

// closeOnContextDone compiles the termination checks the per-call deadline needs (a benchmark turns
// it off to measure what they cost).
var closeOnContextDone = true

// compilationCache is shared by every Runtime in the process, so the same guest (several profiles,
// tests, benchmarks) is compiled to machine code once.
var compilationCache = wazero.NewCompilationCache()

// trustedCompilationCache holds guests compiled without termination checks: wazero keys its in-memory
// cache by module alone, so the two kinds of machine code must not share one.
var trustedCompilationCache = wazero.NewCompilationCache()

// guestModule is a compiled, validated guest and the runtime its instances live in.
type guestModule struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	exported [numExports]bool
	size     int
}

// compileGuest compiles the module once and checks it against the ABI before any instance exists,
// so a wrong guest fails the scheduler's start with one clear error.
func compileGuest(ctx context.Context, wasm []byte, a Args) (*guestModule, error) {
	cache := compilationCache
	if a.Trusted || !closeOnContextDone {
		cache = trustedCompilationCache
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(closeOnContextDone && !a.Trusted). // the per-call deadline stops a running guest
		WithMemoryLimitPages(a.MemoryLimitPages).
		WithCompilationCache(cache))
	g := &guestModule{rt: rt, size: len(wasm)}
	if err := g.setup(ctx, wasm, a); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return g, nil
}

func (g *guestModule) setup(ctx context.Context, wasm []byte, a Args) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, g.rt); err != nil {
		return fmt.Errorf("WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, g.rt); err != nil {
		return fmt.Errorf("host functions: %w", err)
	}
	compiled, err := g.rt.CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("not a valid WebAssembly module for this host: %w", err)
	}
	g.compiled = compiled
	if err := g.validate(); err != nil {
		return err
	}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous, so the pool may hold many instances of one module
		WithStartFunctions("_initialize").
		WithArgs("guest").
		WithSysWalltime().WithSysNanotime(). // real clocks; sleep stays a no-op, so a sleeping guest spins and its deadline can stop it
		WithRandSource(rand.Reader)
	env := map[string]string{"GOMEMLIMIT": strconv.FormatUint(uint64(a.MemoryLimitPages)*pageSize*3/4, 10)}
	for k, v := range a.Env {
		env[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cfg = cfg.WithEnv(k, env[k])
	}
	g.config = cfg
	return nil
}

func (g *guestModule) validate() error {
	exports := g.compiled.ExportedFunctions()
	if _, ok := exports["_start"]; ok {
		return fmt.Errorf("the guest is a WASI command (it exports _start), not a reactor: build it with " +
			"GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared")
	}
	if _, ok := g.compiled.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("the guest does not export its memory as \"memory\"")
	}
	if ims := g.compiled.ImportedMemories(); len(ims) > 0 {
		mod, name, _ := ims[0].Import()
		return fmt.Errorf("the guest imports a memory (%s.%s); it must define its own", mod, name)
	}
	var missing []string
	for e, spec := range exportSpecs {
		def, ok := exports[spec.name]
		if !ok {
			if spec.capability == 0 {
				missing = append(missing, spec.name)
			}
			continue
		}
		if !slices.Equal(def.ParamTypes(), spec.params) || !slices.Equal(def.ResultTypes(), spec.results) {
			return fmt.Errorf("guest export %s has signature %s, want %s", spec.name,
				signature(def.ParamTypes(), def.ResultTypes()), signature(spec.params, spec.results))
		}
		g.exported[e] = true
	}
	if len(missing) > 0 {
		return fmt.Errorf("the guest does not export %s: not a kwokbench guest (ABI v%d)",
			strings.Join(missing, " and "), ABIVersion)
	}
	for _, def := range g.compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		switch mod {
		case wasiModule:
		case hostModule:
			spec, ok := hostFunctionSpecs[name]
			if !ok {
				return fmt.Errorf("the guest imports %s.%s, which this host does not provide (ABI v%d)",
					mod, name, ABIVersion)
			}
			if !slices.Equal(def.ParamTypes(), spec.params) || !slices.Equal(def.ResultTypes(), spec.results) {
				return fmt.Errorf("the guest imports %s.%s with signature %s, want %s", mod, name,
					signature(def.ParamTypes(), def.ResultTypes()), signature(spec.params, spec.results))
			}
		default:
			return fmt.Errorf("the guest imports %s.%s: only %s and %s functions are provided",
				mod, name, hostModule, wasiModule)
		}
	}
	return nil
}

// checkCapabilities checks the capabilities an instance reports against what the module exports.
func (g *guestModule) checkCapabilities(caps uint32) error {
	if caps&^capAll != 0 {
		return fmt.Errorf("guest capabilities %#x has unknown bits", caps)
	}
	if caps&(capPreFilter|capFilter|capScore) == 0 {
		return fmt.Errorf("the guest implements no extension point (capabilities %#x): register at least a "+
			"PreFilter, Filter or Score function", caps)
	}
	for e, spec := range exportSpecs {
		if caps&spec.capability != 0 && !g.exported[e] {
			return fmt.Errorf("the guest's capabilities include %s but it does not export %s", spec.name, spec.name)
		}
	}
	if caps&capNormalizeScore != 0 && caps&capScore == 0 {
		return fmt.Errorf("the guest has normalize_score without score")
	}
	return nil
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	return "(" + names(params) + ") -> (" + names(results) + ")"
}
