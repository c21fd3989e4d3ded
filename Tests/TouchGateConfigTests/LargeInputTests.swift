// Parsing stays fast on the largest file the loader accepts, whatever text its lines hold.

import Testing
import TouchGateConfig

@Suite struct LargeInputTests {
    /// Parses `text`, returning the error (if any) and how long it took.
    func timedParse(_ text: String) -> (ConfigError?, Duration) {
        var failure: ConfigError?
        let elapsed = ContinuousClock().measure {
            do throws(ConfigError) { _ = try ConfigFile.parse(text) } catch { failure = error }
        }
        return (failure, elapsed)
    }

    /// Walking a line backwards one Character at a time looks back over the whole run of regional
    /// indicators at every step (pairs make flags), so trimming by reversed copies took O(n²):
    /// 250,000 of them (1 MB, under ConfigFile.maxSize) kept parse busy for 13 minutes.
    /// 50,000 took about 30 s that way; linear trimming takes milliseconds. The deadline is generous.
    @Test func aLongRunOfRegionalIndicatorsIsRefusedQuickly() {
        let flags = String(repeating: "\u{1F1E6}", count: 50_000)
        let (error, elapsed) = timedParse("password_service = \(flags)\n")
        #expect(error?.line == 1)
        #expect(error?.message.hasPrefix("password_service must be a PAM service name") == true)
        #expect(elapsed < .seconds(5), "parse took \(elapsed)")
    }

    @Test func aLongRunOfRegionalIndicatorsAsAKeyIsRefusedQuickly() {
        let flags = String(repeating: "\u{1F1E6}", count: 50_000)
        let (error, elapsed) = timedParse("\n\(flags) = 3")
        #expect(error?.line == 2)
        #expect(error?.message.hasPrefix("unknown key") == true)
        #expect(elapsed < .seconds(5), "parse took \(elapsed)")
    }

    @Test func everyBlankIsTrimmedAndNothingElse() throws {
        let c = try ConfigFile.parse(" \t\u{0B}\u{0C}password_service\r \t= \u{0C}sudo\u{0B}\t \r\n")
        #expect(c.passwordService == "sudo")
        // A space that carries a combining mark is one Character, not a blank: it stays in the value.
        #expect(throws: ConfigError.self) { try ConfigFile.parse("password_service = sudo \u{301}") }
        #expect(throws: ConfigError(line: 1, message: "password_service has an empty value")) {
            try ConfigFile.parse("password_service = \t \u{0B}")
        }
    }
}
