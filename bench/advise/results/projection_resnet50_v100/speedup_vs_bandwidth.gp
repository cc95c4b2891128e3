set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
10 2.61889
1 15.3846
25 1.76784
100 1.34231
e
10 2.61889
1 1.62695
25 1.76784
100 1.34231
e
10 1.86435
1 3.34728
25 1.48314
100 1.2365
e
10 1.56258
1 4.70092
25 1.12633
100 0.885236
e
10 1.43427
1 1.05434
25 1.75571
100 1.33653
e
10 1.26735
1 2.14066
25 1.0248
100 0.863569
e
10 1
1 1
25 1
100 1
e
10 0.69238
1 0.406738
25 0.904428
100 0.967585
e
10 0.69238
1 0.406738
25 1.05405
100 0.975682
e
10 0.69238
1 0.406738
25 1.16845
100 1.34231
e
10 0.69238
1 0.406738
25 1.16845
100 1.34231
e
10 0.69238
1 0.406738
25 1.16845
100 1.34231
e
10 0.561336
1 0.368941
25 0.804836
100 1.33654
e
10 0.492966
1 0.363304
25 0.621693
100 0.834191
e
10 0.480078
1 0.301662
25 0.730865
100 1.34231
e
unset multiplot
