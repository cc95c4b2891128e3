set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet20_cifar10_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)'
4 2.16407
8 2.38583
16 2.54873
e
4 1.82507
8 1.68951
16 1.36665
e
4 1.67625
8 1.77193
16 1.83734
e
4 1.40294
8 1.54671
16 1.65231
e
4 1.00726
8 1.00658
16 1.00615
e
4 1
8 1
16 1
e
4 0.722982
8 0.797068
16 0.85149
e
4 0.691884
8 0.792488
16 0.851367
e
4 0.670209
8 0.738887
16 0.789336
e
4 0.562688
8 0.620348
16 0.662704
e
4 0.526672
8 0.670073
16 0.777613
e
4 0.518559
8 0.571698
16 0.610732
e
4 0.342744
8 0.377866
16 0.403666
e
4 0.33039
8 0.364246
16 0.389116
e
4 0.33039
8 0.364246
16 0.389116
e
unset multiplot
