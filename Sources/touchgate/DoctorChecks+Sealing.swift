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
        default: return []
        }
    }
}
