// touchgate.conf(5) names exactly the parser's keys, in its order, each at the shipped file's default.

import Testing
import TouchGateConfig

/// `man/touchgate.conf.5` of this checkout.
func manualPagePath(_ file: String = #filePath) -> String {
    var parts = file.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)
    return parts.joined(separator: "/") + "/man/touchgate.conf.5"
}

@Suite struct ManualPageTests {
    /// (key, default) for each `.It Cm key` item, the default being the `.Ql` after "Default:".
    func documented() throws -> [(String, String)] {
        let lines = try #require(try readText(manualPagePath())).split(separator: "\n").map(String.init)
        var items: [(String, String)] = []
        for (i, line) in lines.enumerated() where line.hasPrefix(".It Cm ") {
            let key = String(line.dropFirst(7).prefix { $0 != " " })
            let rest = lines[(i + 1)...].prefix { !$0.hasPrefix(".It ") }
            guard let d = rest.firstIndex(of: "Default:"), d + 1 < lines.count, lines[d + 1].hasPrefix(".Ql ") else {
                Issue.record("\(key): no 'Default:' followed by .Ql"); continue
            }
            var value = String(lines[d + 1].dropFirst(4))
            if value.hasSuffix(" .") { value.removeLast(2) }
            items.append((key, value))
        }
        return items
    }

    @Test func thePageListsEveryKeyOfTheParserInItsOrder() throws {
        #expect(try documented().map(\.0) == ConfigFile.keys)
    }

    @Test func eachDefaultOnThePageIsTheOneTheShippedFileShows() throws {
        let shipped = try #require(try readText(shippedConfigPath()))
        for (key, value) in try documented() {
            #expect(shipped.contains("\n#\(key) = \(value)\n"), "page says \(key) = \(value); the shipped file differs")
        }
    }

    @Test func thePageDefaultsParseToTheDaemonsDefaults() throws {
        let text = try documented().map { "\($0.0) = \($0.1)" }.joined(separator: "\n")
        #expect(try ConfigFile.parse(text) == DaemonConfig.defaults)
    }
}
