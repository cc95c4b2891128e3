set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet50_imagenet_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
4 15.3846
8 17.7533
16 18.9445
e
4 4.75181
8 3.01479
16 1.69285
e
4 3.34728
8 3.42178
16 3.45317
e
4 2.15115
8 2.48234
16 2.64891
e
4 1.62695
8 1.87744
16 2.00342
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
4 0.406738
8 0.46936
16 0.500855
e
4 0.406738
8 0.46936
16 0.500855
e
4 0.406738
8 0.46936
16 0.500855
e
4 0.406738
8 0.46936
16 0.500855
e
4 0.368941
8 0.425744
16 0.454312
e
4 0.363304
8 0.419239
16 0.44737
e
4 0.301662
8 0.348107
16 0.371465
e
unset multiplot
