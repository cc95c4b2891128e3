set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet50_imagenet_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
4 15.3846
8 17.7533
16 18.9445
e
4 4.92882
8 3.13106
16 1.75943
e
4 3.34728
8 3.42178
16 3.45317
e
4 1.43341
8 1.6541
16 1.76509
e
4 1.05434
8 1.04164
16 1.02952
e
4 1
8 1
16 1
e
4 0.406738
8 0.46936
16 0.500855
e
4 0.4067
8 0.46936
16 0.500855
e
4 0.378117
8 0.436333
16 0.465611
e
4 0.375312
8 0.433096
16 0.462157
e
4 0.323275
8 0.415698
16 0.470487
e
4 0.317292
8 0.366143
16 0.390711
e
4 0.218549
8 0.252198
16 0.26912
e
4 0.216583
8 0.249928
16 0.266699
e
4 0.193064
8 0.222789
16 0.237738
e
unset multiplot
