// The GVariant helpers the front-end builds replies with and reads calls through: a value of the
// wrong type or past a tuple's end reads as nil, never as a default.
import CGIO
import Testing
@testable import TouchGateDBus

private func typeString(_ v: Variant) -> String { String(cString: g_variant_get_type_string(v)) }

/// `body` with `v` sunk and released afterwards.
private func with<T>(_ v: Variant, _ body: (Variant) -> T) -> T {
    g_variant_ref_sink(v)
    defer { g_variant_unref(v) }
    return body(v)
}

@Suite("D-Bus: variants")
struct VariantTests {
    @Test("a tuple's strings and object paths read back; other types and missing children read as nil")
    func strings() {
        with(V.tuple([V.string("alice"), V.objectPath("/net/reactivated/Fprint/Device/0"), V.uint32(7)])) { t in
            #expect(typeString(t) == "(sou)")
            #expect(V.stringArg(t, 0) == "alice")
            #expect(V.stringArg(t, 1) == "/net/reactivated/Fprint/Device/0")
            #expect(V.stringArg(t, 2) == nil)
            #expect(V.stringArg(t, 3) == nil)
            #expect(V.stringArg(nil, 0) == nil)
        }
    }

    @Test("booleans and unsigned integers read back only from their own types")
    func scalars() {
        with(V.tuple([V.bool(true), V.uint32(4_000_000_000), V.int32(-1)])) { t in
            #expect(V.boolArg(t, 0) == true)
            #expect(V.uint32Arg(t, 1) == 4_000_000_000)
            #expect(V.boolArg(t, 1) == nil)
            #expect(V.uint32Arg(t, 0) == nil)
            #expect(V.uint32Arg(t, 2) == nil)
            #expect(V.boolArg(t, 3) == nil)
        }
    }

    @Test("arrays, empty ones included, and a{sv} dictionaries have D-Bus's types")
    func containers() {
        with(V.array("s", [])) { #expect(typeString($0) == "as") }
        with(V.array("o", [V.objectPath("/a"), V.objectPath("/b")])) { a in
            #expect(typeString(a) == "ao")
            #expect(g_variant_n_children(a) == 2)
        }
        with(V.vardict([("finger-needed", V.bool(false)), ("num-enroll-stages", V.int32(5))])) { d in
            #expect(typeString(d) == "a{sv}")
            #expect(g_variant_n_children(d) == 2)
        }
        with(V.tuple([])) { #expect(typeString($0) == "()") }
    }
}
