import json,statistics,collections
d=json.load(open('docs/bench/issue38-matrix-16-1000-standalone.json'))
cells=collections.defaultdict(list)
for r in d['results']:
    c=r['cell']; im={i['impl']:i for i in r['impls']}
    k=(c['paths'],c['procs'],c['goroutines'],c['hold_ns'])
    cells[k].append(im['tier']['acquisitions_per_s']/im['gozk']['acquisitions_per_s'])
below=[];meds=[]
for k in sorted(cells):
    v=cells[k]; m=statistics.median(v); meds.append(m)
    flag=' <1' if m<1 else ''
    print(f"paths {k[0]:4d} {k[1]}x{k[2]:<4d} hold {'1ms' if k[3] else '0':3s}: "+", ".join(f"{x:.2f}" for x in v)+f"  median {m:.2f}{flag}")
    if m<1: below.append((k,m))
print(len(cells),"cells; below 1.0 in median:",len(below), "min median %.2f max %.2f median of medians %.2f"%(min(meds),max(meds),statistics.median(meds)))
viol=sum(i.get('violations',0) for r in d['results'] for i in r['impls'])
print("violations",viol)
