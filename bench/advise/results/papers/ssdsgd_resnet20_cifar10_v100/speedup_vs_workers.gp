set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet20_cifar10_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)'
4 2.16407
8 2.38583
16 2.54873
e
4 2.16407
8 2.38583
16 2.54873
e
4 1.82017
8 1.6819
16 1.35736
e
4 1.67625
8 1.77193
16 1.83734
e
4 1.45224
8 1.60105
16 1.71037
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
4 0.722982
8 0.797068
16 0.85149
e
4 0.722982
8 0.797068
16 0.85149
e
4 0.722982
8 0.797068
16 0.85149
e
4 0.722982
8 0.797068
16 0.85149
e
4 0.535589
8 0.590472
16 0.630788
e
4 0.506021
8 0.557875
16 0.595965
e
4 0.506021
8 0.557875
16 0.595965
e
unset multiplot
