import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    print("#", f)
    print("topology   rep  tier/s  gozk/s  ratio  writes/acq(tier) req/acq tier gozk  srvCPU tier gozk ratio  cliCPU tier gozk")
    for r in d['results']:
        c=r['cell']; im={i['impl']:i for i in r['impls']}
        t,g=im['tier'],im['gozk']
        w=sum(t['client_requests_per_acquisition'].get(k,0) for k in ('create','delete','multi','setData'))
        st,sg=t.get('server_cpu_per_acquisition_us') or 0,g.get('server_cpu_per_acquisition_us') or 0
        print(f"{c['topology']:10s} {c['rep']+1:3d} {t['acquisitions_per_s']:7.0f} {g['acquisitions_per_s']:7.0f} {t['acquisitions_per_s']/g['acquisitions_per_s']:5.2f}x  {w:6.3f}  {t['zk_requests_per_acquisition']:5.2f} {g['zk_requests_per_acquisition']:5.2f}  {st:6.1f} {sg:6.1f} {st/sg if sg else 0:5.2f}  {t['client_cpu_per_acquisition_us']:6.1f} {g['client_cpu_per_acquisition_us']:6.1f}  viol {t.get('violations')} {g.get('violations')} lapses {t.get('lease_lapses')}")
