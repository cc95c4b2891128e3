set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/papers/ssdsgd_resnet50_imagenet_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 1 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
4 15.3846
8 17.7533
16 18.9445
e
4 5.03084
8 3.18284
16 1.78557
e
4 3.34728
8 3.42178
16 3.45317
e
4 1.28542
8 1.48333
16 1.58286
e
4 1.05434
8 1.04164
16 1.02952
e
4 1
8 1
16 1
e
4 0.406699
8 0.46936
16 0.500855
e
4 0.380698
8 0.439311
16 0.46879
e
4 0.376752
8 0.434757
16 0.46393
e
4 0.324539
8 0.374506
16 0.399636
e
4 0.323895
8 0.373763
16 0.398843
e
4 0.323275
8 0.415698
16 0.470487
e
4 0.22867
8 0.263877
16 0.281583
e
4 0.226515
8 0.26139
16 0.27893
e
4 0.202836
8 0.234065
16 0.249771
e
unset multiplot
