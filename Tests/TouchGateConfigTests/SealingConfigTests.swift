// touchgate.conf's sealing keys: seal, tpm, seal_pcrs — what parses and what is refused, by line.

import Testing
import TouchGateConfig

@Suite struct SealingConfigTests {
    @Test func theDefaultsSealWhenATPMAnswersOnTheKernelsResourceManagerBoundToNoPCR() {
        let c = DaemonConfig.defaults
        #expect(c.seal == .auto)
        #expect(c.tpm == "device:/dev/tpmrm0")
        #expect(c.sealPCRs.isEmpty)
    }

    @Test func eachKeyIsParsedIntoItsField() throws {
        let c = try ConfigFile.parse("seal = tpm\ntpm = swtpm:host=127.0.0.1,port=2321\nseal_pcrs = 7, 0")
        #expect(c.seal == .tpm)
        #expect(c.tpm == "swtpm:host=127.0.0.1,port=2321")
        #expect(c.sealPCRs == [0, 7])
        #expect(try ConfigFile.parse("seal = no\nseal_pcrs = none").seal == .no)
        #expect(try ConfigFile.parse("seal_pcrs = 23").sealPCRs == [23])
    }

    @Test(arguments: [
        ("seal = yes", "line 1: seal must be auto, tpm or no, got 'yes'"),
        ("seal_pcrs = 24", "line 1: seal_pcrs must be none or PCR numbers 0 to 23 such as 7 or 0,7, got '24'"),
        ("seal_pcrs = 7,,0", "line 1: seal_pcrs must be none or PCR numbers 0 to 23 such as 7 or 0,7, got '7,,0'"),
        ("seal_pcrs = 7,7", "line 1: seal_pcrs names PCR 7 twice"),
        (
            "tpm = device:/dev/tpm rm0",
            "line 1: tpm must be a TPM interface such as device:/dev/tpmrm0 (printable, no blanks), got 'device:/dev/tpm rm0'"
        ),
        ("tpm = :x", "line 1: tpm must be a TPM interface such as device:/dev/tpmrm0 (printable, no blanks), got ':x'"),
    ])
    func badValuesAreRefusedWithTheLineAndWhy(text: String, message: String) {
        #expect(throws: ConfigError.self) { try ConfigFile.parse(text) }
        do { _ = try ConfigFile.parse(text) } catch { #expect(error.description == message) }
    }
}

@Suite struct KeyringConfigTests {
    @Test func theDefaultsReleaseToTheLoginManagersOnlyAndNeedATPM() {
        #expect(
            DaemonConfig.defaults.keyringServices == ["login", "gdm-fingerprint", "gdm-password", "lightdm", "sddm"])
        #expect(DaemonConfig.defaults.keyringWithoutTPM == false)
    }

    @Test func servicesAreAListOfPAMServiceNamesOrNone() throws {
        #expect(try ConfigFile.parse("keyring_services = login, sddm,login").keyringServices == ["login", "sddm"])
        #expect(try ConfigFile.parse("keyring_services = none").keyringServices == [])
        #expect(throws: ConfigError.self) { try ConfigFile.parse("keyring_services = login,../x") }
        #expect(throws: ConfigError.self) { try ConfigFile.parse("keyring_services = none,login") }
        #expect(throws: ConfigError.self) { try ConfigFile.parse("keyring_services = login, none") }
        #expect(try ConfigFile.parse("keyring_without_tpm = yes").keyringWithoutTPM)
    }

    /// The export at the package's removal must reach the TPM the file names even when another
    /// line is broken: every usable line is taken, each broken one told and left out.
    @Test func aLenientReadKeepsEveryUsableLineAndTellsTheOthers() {
        var told: [String] = []
        let c = ConfigFile.parseLeniently(
            "max_tries = lots\ntpm = swtpm:host=127.0.0.1,port=2321\nprint_store = /srv/prints\nbogus\nseal = tpm"
        ) { told.append("\($0)") }
        #expect(c.tpm == "swtpm:host=127.0.0.1,port=2321" && c.printStore == "/srv/prints" && c.seal == .tpm)
        #expect(c.policy.maxTries == DaemonConfig.defaults.policy.maxTries)
        #expect(told.count == 2 && told[0].hasPrefix("line 1: max_tries") && told[1].hasPrefix("line 4: "), "\(told)")
    }
}
