// touchgate_wire.h is the one definition; README.md and docs/spec.md must have a row for each of
// its outcome codes, field tags and message kinds, and no row for anything it lacks.
import Foundation
import Testing
import TouchGateWire

private let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

func text(_ relativePath: String) throws -> String {
    try String(contentsOf: repositoryRoot.appendingPathComponent(relativePath), encoding: .utf8)
}

/// `#define NAME VALUE` lines of the header whose name starts with `prefix`: name → value as written
/// (`(-2007)` → `-2007`, `0x0A` stays hex).
func defines(_ header: String, prefix: String) -> [String: String] {
    var found: [String: String] = [:]
    for line in header.split(separator: "\n") where line.hasPrefix("#define \(prefix)") {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count >= 3 else { continue }
        let value = words[2].trimmingCharacters(in: CharacterSet(charactersIn: "()"))
        found[String(words[1])] = value
    }
    return found
}

/// The rows of the first Markdown table after the line that starts with `heading`: each row's
/// cells, trimmed, with backquotes removed. Empty when the heading is missing.
func tableRows(_ document: String, after heading: String) -> [[String]] {
    let lines = document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }),
        let first = lines[start...].firstIndex(where: { $0.hasPrefix("|") })
    else { return [] }
    let table = lines[first...].prefix { $0.hasPrefix("|") }
    return table.dropFirst(2).map { row in
        row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
            .map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
    }
}

/// First cell → second cell of a table; a number written twice is recorded as a problem.
func firstTwoCells(_ rows: [[String]], _ what: String) -> [String: String] {
    var map: [String: String] = [:]
    for row in rows where row.count >= 2 {
        if map[row[0]] != nil { Issue.record("\(what): two rows for \(row[0])") }
        map[row[0]] = row[1]
    }
    return map
}

@Suite struct DocumentationTests {
    let header: String
    let readme: String
    let spec: String

    init() throws {
        header = try text("Sources/CTouchGateWire/include/touchgate_wire.h")
        readme = try text("README.md")
        spec = try text("docs/spec.md")
    }

    /// Header codes: value → constant name (TG_OK and TG_ERR_*).
    var codes: [String: String] {
        let named = defines(header, prefix: "TG_OK").merging(defines(header, prefix: "TG_ERR_")) { a, _ in a }
        return Dictionary(named.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
    }

    /// Header tags: value → name without the prefix (TG_TAG_LAST and TG_TAG_TYPES are not tags).
    var tags: [String: String] {
        var byValue: [String: String] = [:]
        for (name, value) in defines(header, prefix: "TG_TAG_") where name != "TG_TAG_LAST" && name != "TG_TAG_TYPES" {
            byValue[value] = String(name.dropFirst("TG_TAG_".count))
        }
        return byValue
    }

    @Test func theHeaderIsReadAsTheCodeKnowsIt() throws {
        // The parse above must see what the compiler sees, or the checks below prove nothing.
        #expect(codes.count == Outcome.allCases.count)
        #expect(tags.count == Tag.allCases.count)
        #expect(defines(header, prefix: "TG_KIND_").count == Kind.allCases.count)
    }

    @Test func everyOutcomeCodeHasItsRowInTheSpecUnderItsName() {
        let rows = firstTwoCells(tableRows(spec, after: "## 2."), "docs/spec.md §2")
        #expect(Set(rows.keys) == Set(codes.keys), "docs/spec.md §2's codes differ from touchgate_wire.h's")
        for (value, _) in codes {
            guard let code = Int32(value), let outcome = Outcome(rawValue: code) else {
                Issue.record("header code \(value) is not an Outcome"); continue
            }
            #expect(
                rows[value] == outcome.name,
                "docs/spec.md §2 names \(value) '\(rows[value] ?? "")', not '\(outcome.name)'")
        }
    }

    @Test func everyOutcomeCodeHasItsRowInTheReadme() {
        let rows = firstTwoCells(tableRows(readme, after: "## Wire outcome codes"), "README's outcome table")
        #expect(Set(rows.keys) == Set(codes.keys), "README's outcome codes differ from touchgate_wire.h's")
        for (value, constant) in codes {
            guard let cell = rows[value] else { continue }
            let name = Int32(value).flatMap(Outcome.init(rawValue:))?.name
            // LocalAuthentication's codes go by LAError's names, touchgate's own by the constant.
            #expect(
                cell == constant || cell == name || (value == "0" && cell == "TG_OK"),
                "README names \(value) '\(cell)'")
        }
    }

    @Test func everyFieldTagHasItsRowInTheSpecAndTheReadme() {
        let specRows = firstTwoCells(tableRows(spec, after: "Field tags:"), "docs/spec.md's field tags")
        let readmeRows = firstTwoCells(tableRows(readme, after: "## Wire field tags"), "README's field tags")
        #expect(Set(specRows.keys) == Set(tags.keys), "docs/spec.md's field tags differ from touchgate_wire.h's")
        #expect(Set(readmeRows.keys) == Set(tags.keys), "README's field tags differ from touchgate_wire.h's")
        for (value, name) in tags {
            let documented = specRows[value] ?? ""
            #expect(documented == name, "docs/spec.md names tag \(value) '\(documented)', not '\(name)'")
            #expect(readmeRows[value] == "TG_TAG_\(name)", "README names tag \(value) '\(readmeRows[value] ?? "")'")
        }
    }

    @Test func everyFlagHasItsRowInTheSpec() {
        let rows = firstTwoCells(tableRows(spec, after: "Flags, and who owns which fact."), "docs/spec.md's flags")
        var flags: [String: String] = [:]
        for (name, value) in defines(header, prefix: "TG_FLAG_") {
            let number = Int(value.dropFirst(2), radix: 16) ?? -1
            flags[String(name.dropFirst("TG_FLAG_".count))] = "0x" + String(number, radix: 16)
        }
        #expect(Set(rows.keys) == Set(flags.keys), "docs/spec.md's flags differ from touchgate_wire.h's")
        for (name, value) in flags {
            #expect(rows[name] == value, "docs/spec.md gives flag \(name) '\(rows[name] ?? "")', not \(value)")
        }
    }

    @Test func everyMessageKindHasItsRowInTheSpec() {
        let rows = firstTwoCells(tableRows(spec, after: "Message kinds:"), "docs/spec.md's message kinds")
        var kinds: [String: String] = [:]
        for (name, value) in defines(header, prefix: "TG_KIND_") {
            let hex = value.uppercased().replacingOccurrences(of: "0X", with: "0x")
            kinds[hex] = String(name.dropFirst("TG_KIND_".count))
        }
        #expect(Set(rows.keys) == Set(kinds.keys), "docs/spec.md's message kinds differ from touchgate_wire.h's")
        for (value, name) in kinds {
            #expect(rows[value] == name, "docs/spec.md names kind \(value) '\(rows[value] ?? "")', not '\(name)'")
        }
    }
}
