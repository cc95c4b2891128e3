set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 10 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)'
4 2.61889
16 2.98736
64 3.13152
256 3.37568
1024 4.26922
e
4 1.86435
16 1.99578
64 2.0429
256 2.11785
1024 2.3492
e
4 1.8272
16 1.15238
64 0.433378
256 0.131048
1024 0.0427385
e
4 1.4686
16 1.07079
64 1.12246
256 1.20998
1024 1.53026
e
4 1.43427
16 1.22224
64 0.872941
256 0.43126
1024 0.172808
e
4 1
16 1
64 1
256 1
1024 1
e
4 0.668443
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.627207
16 0.364228
64 0.381803
256 0.411572
1024 0.520515
e
4 0.539749
16 0.31183
64 0.326877
256 0.352364
1024 0.445634
e
4 0.53522
16 0.310304
64 0.325277
256 0.350638
1024 0.443452
e
4 0.511785
16 0.328787
64 0.344652
256 0.371525
1024 0.469867
e
4 0.508804
16 0.3676
64 0.406409
256 0.444169
1024 0.563693
e
4 0.362222
16 0.214885
64 0.225254
256 0.242817
1024 0.307091
e
4 0.337328
16 0.19489
64 0.204294
256 0.220222
1024 0.278515
e
4 0.332764
16 0.205428
64 0.215341
256 0.232131
1024 0.293575
e
unset multiplot
