#!/bin/sh
# A plugin in shell: answers every request with the signals it ignores, as /proc says (SigIgn, a
# hexadecimal mask, bit n-1 for signal n).
while read -r line; do
    id=$(printf '%s' "$line" | sed -n 's/^{"jsonrpc":"2.0","id":\([0-9]*\).*/\1/p')
    ignored=$(grep SigIgn /proc/self/status | cut -f2)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"actions":[{"reply":"ignored %s"}]}}\n' "$id" "$ignored"
done
