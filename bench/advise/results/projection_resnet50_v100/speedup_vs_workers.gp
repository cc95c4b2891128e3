set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_workers.png'
set multiplot layout 1,1
set logscale x 2
set xlabel 'workers'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against workers, at 10 Gbps'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)'
4 2.61889
16 2.98736
64 3.13152
256 3.37568
1024 4.26922
e
4 2.61889
16 1.5796
64 1.65582
256 1.78492
1024 2.25739
e
4 1.86435
16 1.99578
64 2.0429
256 2.11785
1024 2.3492
e
4 1.56258
16 0.909828
64 0.322398
256 0.0952714
1024 0.0308674
e
4 1.43427
16 1.22224
64 0.872941
256 0.43126
1024 0.172808
e
4 1.26735
16 1.01877
64 1.06793
256 1.1512
1024 1.45592
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
4 0.69238
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.69238
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.69238
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.69238
16 0.394899
64 0.413954
256 0.44623
1024 0.564347
e
4 0.561336
16 0.340234
64 0.356651
256 0.384459
1024 0.486225
e
4 0.492966
16 0.316881
64 0.332172
256 0.358071
1024 0.452853
e
4 0.480078
16 0.312159
64 0.327222
256 0.352735
1024 0.446104
e
unset multiplot
