set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet20_cifar10_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)'
4 2.16407
8 2.38583
16 2.54873
e
4 1.79376
8 1.63467
16 1.29757
e
4 1.67625
8 1.77193
16 1.83734
e
4 1.39198
8 1.53461
16 1.63939
e
4 1.00726
8 1.00658
16 1.00615
e
4 1
8 1
16 1
e
4 0.691672
8 0.792456
16 0.851366
e
4 0.671725
8 0.740559
16 0.791123
e
4 0.575885
8 0.634898
16 0.678247
e
4 0.572453
8 0.631113
16 0.674204
e
4 0.526672
8 0.670073
16 0.777613
e
4 0.519196
8 0.572399
16 0.611481
e
4 0.359773
8 0.39664
16 0.423721
e
4 0.343328
8 0.37851
16 0.404354
e
4 0.343328
8 0.37851
16 0.404354
e
unset multiplot
