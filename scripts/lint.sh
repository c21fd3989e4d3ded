#!/usr/bin/env bash
# The style checks: swift-format (.swift-format) over Sources/, Tests/, bench/ and Package.swift,
# clang-format (.clang-format) over the C of pam/, Sources/C* and bench/, shellcheck (.shellcheckrc) over
# the shell of scripts/, bench/, fuzz/ and .ci/. Each tool passes or fails as a whole; the last line
# is `lint: N passed, N failed` and the exit status is non-zero if any failed.
# --fix first applies both formatters in place (shellcheck has no fixer: its findings stay to fix).
# LINT_VERBOSE=1 prints every formatter finding, not only the counts.
set -uo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT" || exit 1

fix=no
for arg in "$@"; do
    case "$arg" in
        --fix) fix=yes ;;
        *) echo "usage: $0 [--fix]" >&2; exit 2 ;;
    esac
done

passed=0
failed=0
# result NAME FINDINGS: one tool's verdict.
result() {
    if [ "$2" -eq 0 ]; then
        echo "lint: $1 passed"
        passed=$((passed + 1))
    else
        echo "lint: $1 failed ($2 findings)"
        failed=$((failed + 1))
    fi
}
# missing TOOL PACKAGE: a tool that is not installed fails its check, saying how to get it.
missing() {
    echo "lint: $1 not found (scripts/deps.sh installs $2)" >&2
    failed=$((failed + 1))
}

# The files each tool checks, NUL-separated so no name is split.
swift_files() { find Sources Tests bench -name '*.swift' -print0; printf '%s\0' Package.swift; }
c_files() { find pam Sources/C* bench \( -name '*.c' -o -name '*.h' \) -print0; }
shell_files() {
    local f
    while IFS= read -r -d '' f; do
        case "$f" in
            *.sh) printf '%s\0' "$f" ;;
            *) head -n1 "$f" | grep -Eq '^#!.*(/|env )(ba)?sh\b' && printf '%s\0' "$f" ;;
        esac
    done < <(find scripts bench fuzz .ci -type f -print0)
}

swift_format=$(command -v swift-format || true)
if [ -z "$swift_format" ]; then
    missing swift-format "nothing: it comes with the Swift toolchain"
else
    [ "$fix" = yes ] && swift_files | xargs -0 "$swift_format" format --in-place
    out=$(swift_files | xargs -0 "$swift_format" lint --strict 2>&1)
    findings=$(grep -c ': \(error\|warning\): ' <<<"$out")
    [ -n "${LINT_VERBOSE:-}" ] && echo "$out"
    [ "$findings" -eq 0 ] || { echo "swift-format findings by rule:"; grep -o '\[[A-Za-z]*\]' <<<"$out" | sort | uniq -c | sort -rn; }
    result swift-format "$findings"
fi

if ! command -v clang-format >/dev/null 2>&1; then
    missing clang-format clang-format
else
    [ "$fix" = yes ] && c_files | xargs -0 clang-format -i --style=file
    out=$(c_files | xargs -0 clang-format --dry-run -Werror --style=file 2>&1)
    findings=$(grep -c 'error: code should be clang-formatted' <<<"$out")
    [ -n "${LINT_VERBOSE:-}" ] && echo "$out"
    files=$(grep 'error: code should be clang-formatted' <<<"$out" | cut -d: -f1 | sort -u | wc -l)
    [ "$findings" -eq 0 ] || echo "clang-format: $findings places to reformat in $files files"
    result clang-format "$findings"
fi

if ! command -v shellcheck >/dev/null 2>&1; then
    missing shellcheck shellcheck
else
    out=$(shell_files | xargs -0 shellcheck -f gcc 2>&1)
    findings=$(grep -c ': \(error\|warning\|note\|style\|info\): ' <<<"$out")
    [ "$findings" -eq 0 ] || echo "$out"
    result shellcheck "$findings"
fi

echo "lint: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
