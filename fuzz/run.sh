#!/usr/bin/env bash
# Builds the libFuzzer harnesses (Swift frame decoder, Swift config parser, C frame decoder, the PAM
# module's handling of the daemon's replies) and runs each.
#
#   fuzz/run.sh [SECONDS]    each harness for SECONDS, the four side by side (default 20)
#   fuzz/run.sh --runs N     each harness for N executions (the long run)
#
# Prints each harness's executions and a "fuzz: N passed, N failed" line; exits non-zero if any
# harness crashed, timed out, ran no input or did not build. A crash's input is kept in
# .build-fuzz/artifacts/ and named in the output with the command that replays it. The corpus grows
# in .build-fuzz/corpus/.
set -uo pipefail
# shellcheck source=../scripts/env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$TOUCHGATE_ROOT" || exit 1
exec </dev/null

usage() { echo "usage: $0 [SECONDS] | --runs N" >&2; exit 2; }
limit=(-max_total_time=20)
case "${1:-}" in
    "") ;;
    --runs) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage; limit=(-runs="$2") ;;
    *) if ! [[ "$1" =~ ^[1-9][0-9]*$ ]] || [ $# -ne 1 ]; then usage; fi; limit=(-max_total_time="$1") ;;
esac

out=.build-fuzz
mkdir -p "$out"/{obj,mod,bin,cmod,seeds,corpus,artifacts,logs}
# The Swift driver leaves an empty directory in TMPDIR at every run (scripts/swift.sh says more):
# this run's TMPDIR is its own, emptied at the start.
export TMPDIR="$TOUCHGATE_ROOT/$out/tmp"
rm -rf --one-file-system "$TMPDIR" && mkdir -p "$TMPDIR"

# --- build -------------------------------------------------------------------------------------
# From the package's own sources, one module per target as SwiftPM has them, every module
# instrumented for coverage (-sanitize=fuzzer) and checked by AddressSanitizer.
# (fuzzer,address is one argument of swiftc's, not two array elements)
# shellcheck disable=SC2054
swift_flags=(-sanitize=fuzzer,address -use-ld=lld -swift-version 6 -parse-as-library -O -g -I "$out/mod" -I "$out/cmod")

# The C header reaches Swift through a module map, as SwiftPM generates one for CTouchGateWire.
cat >"$out/cmod/module.modulemap" <<EOF
module CTouchGateWire {
    header "$TOUCHGATE_ROOT/Sources/CTouchGateWire/include/touchgate_wire.h"
    export *
}
EOF

module() {  # module NAME: Sources/NAME/*.swift → $out/obj/NAME.o and its .swiftmodule
    swiftc "${swift_flags[@]}" -wmo -module-name "$1" -c -o "$out/obj/$1.o" \
        -emit-module -emit-module-path "$out/mod/$1.swiftmodule" Sources/"$1"/*.swift
}
harness() {  # harness NAME SOURCE MODULES...: one fuzzer binary
    local name=$1 source=$2; shift 2
    local objs=()
    for m in "$@"; do objs+=("$out/obj/$m.o"); done
    swiftc "${swift_flags[@]}" -module-name "${name//-/_}" -o "$out/bin/$name" "$source" "${objs[@]}"
}

echo "building the harnesses in $out/"
built=$(date +%s)
if ! { module TouchGateWire && module TouchGatePolicy && module TouchGateConfig \
        && harness fuzz-frame fuzz/FrameFuzz.swift TouchGateWire \
        && harness fuzz-config fuzz/ConfigFuzz.swift TouchGateConfig TouchGatePolicy \
        && make -s -C pam tests/fuzz_frame tests/fuzz_reply; }; then
    echo "fuzz: the harnesses did not build"
    echo "fuzz: 0 passed, 4 failed"
    exit 1
fi
echo "built in $(( $(date +%s) - built )) s"

# --- seeds -------------------------------------------------------------------------------------
# Regenerated on every run from what the repository already has, plus a few configs made here and
# the daemon's replies the reply harness writes with the encoder.
rm -rf "$out/seeds" && mkdir -p "$out/seeds/frame" "$out/seeds/config" "$out/seeds/reply"
for v in Tests/Vectors/*.hex; do
    printf '%b' "$(tr -d ' \r\n' <"$v" | sed 's/../\\x&/g')" >"$out/seeds/frame/$(basename "$v" .hex)"
done
cfg="$out/seeds/config"
cp debian/touchgate.conf "$cfg/shipped"
sed -E 's/^#([a-z_]+ = )/\1/' debian/touchgate.conf >"$cfg/shipped-uncommented"
# One small file per documented setting: mutations of a short input land on its value.
sed -nE 's/^#([a-z_]+) = (.*)$/\1 \2/p' debian/touchgate.conf | while read -r key value; do
    printf '%s = %s\n' "$key" "$value" >"$cfg/key-$key"
done
printf '\xef\xbb\xbfmax_tries = 5\r\ntimeout = 90s\r\n\r\nallow_remote = true\r\n' >"$cfg/bom-crlf"
printf 'lockout_threshold=1000\n  password_backoff = 1s, 2m ,3h,30d # steps\npassword_interval_grace = 0\n' >"$cfg/edges"
printf 'password_backoff = 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\npassword_service = touchgate-verify_1.0\n' >"$cfg/long-backoff"
printf 'unlock_idle_timeout = 3650d\npassword_interval = 87600h\nrequire_password_after_enrollment_change = no\n' >"$cfg/max-durations"
printf 'timeout = 5\ntimeout = 6\nmax_try = 3\n= 1\npassword_service = ..\nmax_tries = 101\n' >"$cfg/mistakes"
if ! TG_FUZZ_WRITE_SEEDS="$out/seeds/reply" pam/tests/fuzz_reply >"$out/logs/reply-seeds.log" 2>&1; then
    echo "fuzz: the reply harness wrote no seeds (see $out/logs/reply-seeds.log)"
    echo "fuzz: 0 passed, 4 failed"
    exit 1
fi

# --- runs --------------------------------------------------------------------------------------
# The four harnesses run side by side, each for the time limit; each one's report is printed
# after all have ended, in this order.
fuzz() {  # fuzz NAME TITLE BINARY SEEDS MAX_LEN [libFuzzer flags...]: its report; exit 1 if it failed
    local name=$1 title=$2 bin=$3 seeds=$4 max_len=$5; shift 5
    local corpus="$out/corpus/$name" log="$out/logs/$name.log" started rc
    mkdir -p "$corpus"
    started=$(date +%s.%N)
    # -timeout: an input that takes 10 s is a hang (a failure), not a slow machine.
    # SWIFT_BACKTRACE off: a Swift trap goes straight to libFuzzer, which saves the input.
    SWIFT_BACKTRACE=enable=no "$bin" "$corpus" "$seeds" "${limit[@]}" -max_len="$max_len" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/$name-" "$@" >"$log" 2>&1
    rc=$?
    local secs execs
    secs=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    execs=${execs:-0}
    echo "$execs" >"$out/logs/$name.executions"
    # A harness that ran no input at all tested nothing: that is a failure, whatever its exit.
    if [ "$rc" -eq 0 ] && [ "$execs" -gt 0 ]; then
        printf '  %-8s %s: %s executions in %.0f s (%.0f/s), 0 crashes, corpus %s inputs\n' \
            "$name" "$title" "$execs" "$secs" "$(awk -v n="$execs" -v s="$secs" 'BEGIN { print n / s }')" "$(find "$corpus" -mindepth 1 -maxdepth 1 | wc -l)"
        return 0
    fi
    printf '  %-8s %s: FAILED (exit %s) after %s executions in %.0f s\n' "$name" "$title" "$rc" "$execs" "$secs"
    local unit
    unit=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ -n "$unit" ] && [ -f "$unit" ]; then
        echo "  reproducer: $unit ($(stat -c %s "$unit") bytes)"
        echo "  replay: SWIFT_BACKTRACE=enable=no $bin $unit"
        echo "  reproducer bytes (hex, first 256): $(head -c 256 "$unit" | od -An -v -tx1 | tr -d ' \n')"
    else
        echo "  no reproducer written (see $log)"
    fi
    # What went wrong first (the harness's message or the sanitizer's), then the stack.
    grep -m 4 -E "Fatal error|ERROR: |SUMMARY: |runtime error|^fuzz_reply: " "$log" | sed 's/^/  why: /'
    echo "  --- last lines of $log"
    tail -n 30 "$log" | sed 's/^/  | /'
    return 1
}

echo "fuzzing (${limit[*]}, side by side), seeds: Tests/Vectors, debian/touchgate.conf, hand-made configs and replies"
names=(frame config c-frame c-reply)
rm -f "$out"/logs/*.executions "$out"/logs/*.report
fuzz frame "Swift Frame.decode/FrameReader" "$out/bin/fuzz-frame" "$out/seeds/frame" 9000 >"$out/logs/frame.report" &
fuzz config "Swift ConfigFile.parse" "$out/bin/fuzz-config" "$out/seeds/config" 4096 -dict=fuzz/config.dict \
    >"$out/logs/config.report" &
fuzz c-frame "C tg_frame_decode" pam/tests/fuzz_frame "$out/seeds/frame" 9000 >"$out/logs/c-frame.report" &
fuzz c-reply "C pam_sm_authenticate, the daemon's replies" pam/tests/fuzz_reply "$out/seeds/reply" 9000 \
    >"$out/logs/c-reply.report" &
passed=0; failed=0; counts=()
for pid in $(jobs -p); do
    if wait "$pid"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
for name in "${names[@]}"; do
    cat "$out/logs/$name.report"
    counts+=("$name $(cat "$out/logs/$name.executions" 2>/dev/null || echo 0)")
done

summary=$(printf '%s, ' "${counts[@]}")
echo "fuzz: $passed passed, $failed failed (executions: ${summary%, })"
[ "$failed" -eq 0 ]
