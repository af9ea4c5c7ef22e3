import json, sys
def load(p):
    return {(r['condition'], r['id']): r for r in map(json.loads, open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
keys = ('sql', 'outcome', 'correct', 'tool_calls', 'tools', 'abstain_reason', 'tool_tokens', 'tables_read', 'reason')
diff = [(k, f) for k in sorted(a) for f in keys if a[k].get(f) != b.get(k, {}).get(f)]
print(f"{len(a)} records before, {len(b)} after; {len({k for k, _ in diff})} differ")
for k, f in diff[:20]:
    print(k, f, repr(a[k].get(f))[:150], '->', repr(b.get(k, {}).get(f))[:150])
