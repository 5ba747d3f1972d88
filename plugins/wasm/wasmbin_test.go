package wasm

import "encoding/binary"

// A tiny WebAssembly binary writer for hand-made guests: non-Go guests (no _initialize, no runtime)
// and modules that break the ABI in exactly one way.

const (
	tI32 = 0x7f
	tI64 = 0x7e
)

// Instructions used by the test modules.
var (
	opUnreachable = []byte{0x00}
	opSpin        = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b, 0x00} // loop; br 0; end; unreachable
)

func opI32(v int32) []byte { return sleb([]byte{0x41}, int64(v)) }
func opI64(v int64) []byte { return sleb([]byte{0x42}, v) }

// sleb appends v in signed LEB128 (not Go's zigzag varint).
func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

type wasmFunc struct {
	params, results []byte
	body            []byte // instructions, without the final end
	export          string
}

type wasmImport struct {
	module, name    string
	params, results []byte
}

type wasmModule struct {
	imports      []wasmImport
	funcs        []wasmFunc
	memMin       uint32
	exportMemory bool
}

func uleb(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func wasmName(b []byte, s string) []byte { return append(uleb(b, uint64(len(s))), s...) }

func section(b []byte, id byte, content []byte) []byte {
	return append(uleb(append(b, id), uint64(len(content))), content...)
}

func funcType(b, params, results []byte) []byte {
	b = append(uleb(append(b, 0x60), uint64(len(params))), params...)
	return append(uleb(b, uint64(len(results))), results...)
}

func (m wasmModule) bytes() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	// one type per import and per function, in that order
	var types []byte
	n := 0
	for _, im := range m.imports {
		types = funcType(types, im.params, im.results)
		n++
	}
	for _, f := range m.funcs {
		types = funcType(types, f.params, f.results)
		n++
	}
	out = section(out, 1, append(uleb(nil, uint64(n)), types...))
	if len(m.imports) > 0 {
		c := uleb(nil, uint64(len(m.imports)))
		for i, im := range m.imports {
			c = append(wasmName(wasmName(c, im.module), im.name), 0x00)
			c = uleb(c, uint64(i))
		}
		out = section(out, 2, c)
	}
	c := uleb(nil, uint64(len(m.funcs)))
	for i := range m.funcs {
		c = uleb(c, uint64(len(m.imports)+i))
	}
	out = section(out, 3, c)
	if m.memMin > 0 || m.exportMemory {
		out = section(out, 5, uleb([]byte{0x01, 0x00}, uint64(m.memMin)))
	}
	var exports []byte
	ne := 0
	for i, f := range m.funcs {
		if f.export != "" {
			exports = uleb(append(wasmName(exports, f.export), 0x00), uint64(len(m.imports)+i))
			ne++
		}
	}
	if m.exportMemory {
		exports = uleb(append(wasmName(exports, "memory"), 0x02), 0)
		ne++
	}
	out = section(out, 7, append(uleb(nil, uint64(ne)), exports...))
	code := uleb(nil, uint64(len(m.funcs)))
	for _, f := range m.funcs {
		body := append(append([]byte{0x00}, f.body...), 0x0b) // no locals; body; end
		code = append(uleb(code, uint64(len(body))), body...)
	}
	return section(out, 10, code)
}

// abiFuncs are the two exports every guest has: abi_version and capabilities.
func abiFuncs(version, caps int32) []wasmFunc {
	return []wasmFunc{
		{nil, []byte{tI32}, opI32(version), "abi_version"},
		{nil, []byte{tI32}, opI32(caps), "capabilities"},
	}
}

// handGuest is a valid non-Go guest whose filter runs body.
func handGuest(filterBody []byte) wasmModule {
	return wasmModule{memMin: 1, exportMemory: true,
		funcs: append(abiFuncs(1, capFilter), wasmFunc{[]byte{tI64}, []byte{tI32}, filterBody, "filter"})}
}
