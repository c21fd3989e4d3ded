// The doctor's check of the print store's sealing (docs/SECURITY.md §6), from the daemon's status.
import TouchGateL10n

extension DoctorChecks {
    /// Whether the prints are sealed to the TPM (docs/SECURITY.md), from the daemon's status.
    static func sealing(_ document: JSONValue) -> [DoctorCheck] {
        let detail = document["sealingDetail"]?.scalarText ?? ""
        switch document["sealing"]?.scalarText {
        case "sealed"?:
            return [DoctorCheck("sealing", .ok, L("enrolled prints are sealed to this computer's TPM", cli))]
        case "clear"?:
            return [
                DoctorCheck(
                    "sealing", .note, L("enrolled prints are not sealed: %s", cli, detail),
                    fix: L("with a TPM 2.0, set seal = auto or seal = tpm in touchgate.conf", cli))
            ]
        case "unavailable"?:
            return [
                DoctorCheck(
                    "sealing", .problem, L("sealed prints cannot be opened: %s", cli, detail),
                    fix: L("check the TPM (the tpm key in touchgate.conf); passwords still work", cli))
            ]
        case "refused"? where document["sealingRefusal"]?.scalarText == "ownerPassword":
            return [
                DoctorCheck(
                    "sealing", .problem, L("sealing cannot use this TPM: its owner hierarchy has a password", cli),
                    fix: L(
                        "clear the TPM's owner password, or set seal = no in touchgate.conf; passwords still work", cli)
                )
            ]
        case "refused"?:
            // The key sealed on another TPM, or on this one before it was cleared, or bound to PCRs
            // that changed: asking again opens nothing (docs/SECURITY.md §6).
            let key = document["sealingKeyFile"]?.scalarText ?? "sealed-key"
            return [
                DoctorCheck(
                    "sealing", .problem,
                    L(
                        "the TPM no longer opens the key the prints are sealed with (the TPM was cleared, the disk comes from another machine, or the bound PCRs changed)",
                        cli),
                    fix: L(
                        "remove %s, restart touchgated and enroll every finger again (if only the bound PCRs changed, booting as before also opens them); passwords still work",
                        cli, key))
            ]
        default: return []
        }
    }

    /// The TPM refuses the sealing for good (the daemon's status says "refused").
    static func sealingRefused(_ document: JSONValue) -> Bool { document["sealing"]?.scalarText == "refused" }
}
