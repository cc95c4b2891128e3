set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet20_cifar10_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)'
1 2.16407
10 1.15385
e
1 1.79376
10 1.07362
e
1 1.67625
10 1.11111
e
1 1.39198
10 1.15385
e
1 1.00726
10 1.0137
e
1 1
10 1
e
1 0.691672
10 1.02985
e
1 0.671725
10 1.15385
e
1 0.575885
10 1.15385
e
1 0.572453
10 1.15385
e
1 0.526672
10 0.956878
e
1 0.519196
10 0.865051
e
1 0.359773
10 1.15385
e
1 0.343328
10 0.743825
e
1 0.343328
10 0.743825
e
unset multiplot
