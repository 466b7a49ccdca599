# The SDK's pytest fixture, `perch_host`.
pytest_plugins = ["perch_sdk.testing"]
