set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet20_cifar10_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)'
1 2.16407
10 1.15385
e
1 1.82507
10 1.09182
e
1 1.67625
10 1.11111
e
1 1.40294
10 1.15385
e
1 1.00726
10 1.0137
e
1 1
10 1
e
1 0.722982
10 1.15385
e
1 0.691884
10 1.02881
e
1 0.670209
10 1.15385
e
1 0.562688
10 1.15385
e
1 0.526672
10 0.956878
e
1 0.518559
10 0.864424
e
1 0.342744
10 1.15385
e
1 0.33039
10 0.732025
e
1 0.33039
10 0.732025
e
unset multiplot
