set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet50_imagenet_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
1 15.3846
10 2.61889
e
1 5.03084
10 1.82074
e
1 3.34728
10 1.86435
e
1 1.28542
10 1.4686
e
1 1.05434
10 1.43427
e
1 1
10 1
e
1 0.406699
10 0.668469
e
1 0.380698
10 0.627495
e
1 0.376752
10 0.511977
e
1 0.324539
10 0.539749
e
1 0.323895
10 0.535388
e
1 0.323275
10 0.508804
e
1 0.22867
10 0.362222
e
1 0.226515
10 0.332764
e
1 0.202836
10 0.337328
e
unset multiplot
