set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 10 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
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
4 1.66391
16 1.01819
64 0.373946
256 0.112018
1024 0.0364333
e
4 1.47786
16 1.07936
64 1.13144
256 1.21966
1024 1.5425
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
4 0.69238
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.665733
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.60514
16 0.359476
64 0.376822
256 0.406203
1024 0.513725
e
4 0.510799
16 0.307665
64 0.32251
256 0.347656
1024 0.439681
e
4 0.508804
16 0.3676
64 0.406409
256 0.444169
1024 0.563693
e
4 0.507147
16 0.326611
64 0.342371
256 0.369066
1024 0.466758
e
4 0.34722
16 0.205657
64 0.215581
256 0.232389
1024 0.293903
e
4 0.320094
16 0.196989
64 0.206494
256 0.222595
1024 0.281515
e
4 0.31461
16 0.195154
64 0.204571
256 0.220521
1024 0.278893
e
unset multiplot
