"""scripts/swift-test, the watchdog around `swift test`, run against a stand-in `swift` on PATH.

The stand-in builds nothing; as `swift test` it hangs (prints, then sleeps) on the runs listed in
FAKE_HANG_RUNS, exits with FAKE_EXIT otherwise, and counts its runs in a file.
"""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAKE_SWIFT = """#!/bin/sh
[ "$1" = build ] && exit 0
count=$(cat "$FAKE_COUNT" 2>/dev/null || echo 0); count=$((count + 1)); echo $count > "$FAKE_COUNT"
echo "◇ Test run started."
echo "◇ Test slowOne() started."
case " $FAKE_HANG_RUNS " in *" $count "*) exec sleep 60 ;; esac
echo "✔ Test slowOne() passed after 0.1 seconds."
exit "${FAKE_EXIT:-0}"
"""


class SwiftTestWatchdogTests(unittest.TestCase):
    def run_watchdog(self, hang_runs, exit_status=0):
        with tempfile.TemporaryDirectory() as directory:
            fake = pathlib.Path(directory, "swift")
            fake.write_text(FAKE_SWIFT)
            fake.chmod(0o755)
            environment = {
                **os.environ, "PATH": f"{directory}:{os.environ['PATH']}", "PERCH_TEST_QUIET_SECONDS": "2",
                "FAKE_COUNT": str(pathlib.Path(directory, "count")), "FAKE_HANG_RUNS": " ".join(map(str, hang_runs)),
                "FAKE_EXIT": str(exit_status)}
            result = subprocess.run(
                [sys.executable, str(ROOT / "scripts/swift-test")], env=environment, capture_output=True, text=True,
                timeout=60, check=False)
            runs = int(pathlib.Path(directory, "count").read_text())
            return result, runs

    def test_a_clean_run_passes(self):
        result, runs = self.run_watchdog(hang_runs=[])
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertEqual(runs, 1)

    def test_a_hang_fails_the_run_even_when_the_rerun_passes(self):
        result, runs = self.run_watchdog(hang_runs=[1])
        self.assertEqual(runs, 2)
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn("run 1 HUNG with these tests unfinished: slowOne()", result.stdout)

    def test_a_failing_run_fails(self):
        result, runs = self.run_watchdog(hang_runs=[], exit_status=1)
        self.assertNotEqual(result.returncode, 0)
        self.assertEqual(runs, 1)


if __name__ == "__main__":
    unittest.main()
