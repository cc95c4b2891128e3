set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
10 2.61889
1 15.3846
25 1.76784
100 1.34231
e
10 1.86435
1 3.34728
25 1.48314
100 1.2365
e
10 1.66391
1 4.85224
25 1.20467
100 0.949121
e
10 1.47786
1 1.43341
25 1.50494
100 1.34231
e
10 1.43427
1 1.05434
25 1.75571
100 1.33653
e
10 1
1 1
25 1
100 1
e
10 0.69238
1 0.406738
25 1.16845
100 1.34231
e
10 0.665733
1 0.406699
25 0.883486
100 0.98315
e
10 0.60514
1 0.377971
25 0.929115
100 1.34231
e
10 0.510799
1 0.31721
25 0.790797
100 1.34231
e
10 0.508804
1 0.323275
25 0.709121
100 0.938234
e
10 0.507147
1 0.375168
25 0.637196
100 0.849768
e
10 0.34722
1 0.218549
25 0.527349
100 1.06766
e
10 0.320094
1 0.216583
25 0.442902
100 0.707813
e
10 0.31461
1 0.193064
25 0.495646
100 1.12991
e
unset multiplot
