// The machine reasons: one list in touchgate_wire.h (TG_REASON_*), the same in the Reason
// enumeration, and a row for each in docs/spec.md §2 — a reason added on one side only fails here.
import Foundation
import Testing
import TouchGateWire

@Suite struct ReasonTests {
    let header: String
    let spec: String

    init() throws {
        header = try text("Sources/CTouchGateWire/include/touchgate_wire.h")
        spec = try text("docs/spec.md")
    }

    /// The header's reason strings: constant name → the string, without its quotes.
    var headerStrings: [String: String] {
        defines(header, prefix: "TG_REASON_").mapValues { $0.trimmingCharacters(in: ["\""]) }
    }

    @Test func theHeaderAndTheEnumerationNameTheSameReasons() {
        let inHeader = Set(headerStrings.values)
        let inSwift = Set(Reason.allCases.map(\.rawValue))
        #expect(headerStrings.count == inHeader.count, "touchgate_wire.h defines a reason string twice")
        #expect(inHeader.subtracting(inSwift).isEmpty, "only in touchgate_wire.h: \(inHeader.subtracting(inSwift))")
        #expect(inSwift.subtracting(inHeader).isEmpty, "only in Reason: \(inSwift.subtracting(inHeader))")
    }

    @Test func eachCaseIsItsHeaderConstant() {
        // As the compiler sees the header: every case has its constant, with the same string.
        #expect(headerReasons.count == Reason.allCases.count)
        for reason in Reason.allCases {
            #expect(headerReasons[reason] == reason.rawValue, "\(reason): TG_REASON_ constant missing or different")
        }
    }

    @Test func everyReasonHasItsRowInTheSpec() {
        let rows = firstTwoCells(tableRows(spec, after: "Reasons:"), "docs/spec.md's reasons")
        let documented = Set(rows.keys)
        let known = Set(Reason.allCases.map(\.rawValue))
        #expect(!documented.isEmpty, "docs/spec.md has no \"Reasons:\" table")
        #expect(known.subtracting(documented).isEmpty, "no row in docs/spec.md: \(known.subtracting(documented))")
        #expect(documented.subtracting(known).isEmpty, "not a Reason: \(documented.subtracting(known))")
    }
}
