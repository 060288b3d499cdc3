#!/usr/bin/env bash
# The Java SDK's tests, as CI runs them: bash sdk/java/test.sh
# Unit tests and the shared vectors always; RegistrationIT when TASKRING_IT_ZK is set
# (e.g. 127.0.0.1:22181), ServerValidationIT when TASKRING_IT_NODES is set.
# Maven's repository stays the default ~/.m2. Exits with Maven's status.
set -uo pipefail
cd "$(dirname "$0")"
rm -rf target/surefire-reports  # stale reports would skew the summary below
mvn -q -B -Dstyle.color=never test "$@"
status=$?
# -q hides Surefire's summary; print one from the reports so the log says what ran.
# (Maven 3.8 leaves ANSI resets without a newline on the last line: start on a fresh one.)
echo
if compgen -G "target/surefire-reports/*.txt" > /dev/null; then
    awk -F'[:,] *' '/^Tests run:/ { t += $2; f += $4; e += $6; s += $8 }
        END { printf "Tests run: %d, Failures: %d, Errors: %d, Skipped: %d\n", t, f, e, s
              printf "java: %d passed, %d failed, %d skipped\n", t - f - e - s, f + e, s }' \
        target/surefire-reports/*.txt
fi
exit $status
