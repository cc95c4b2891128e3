set terminal pngcairo size 900,560 noenhanced
set output 'bench/advise/results/projection_resnet50_v100/speedup_vs_bandwidth.png'
set multiplot layout 1,1
set logscale x 10
set xlabel 'bandwidth (Gbps)'
set ylabel 'predicted speedup over S-SGD'
set key outside right
set title 'ferry advise: speedup against bandwidth, 4 workers'
plot '-' using 1:2 with linespoints title 'compute-only (allreduce)', '-' using 1:2 with linespoints title 'localsgd (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'wfbp (allreduce)', '-' using 1:2 with linespoints title 'ssgd (allreduce)', '-' using 1:2 with linespoints title 'asgd (ps, twobit)', '-' using 1:2 with linespoints title 'odsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssdsgd (ps)', '-' using 1:2 with linespoints title 'cdsgd (ps, twobit)', '-' using 1:2 with linespoints title 'ssgd (ps, twobit)', '-' using 1:2 with linespoints title 'asgd (ps)', '-' using 1:2 with linespoints title 'wfbp (ps)', '-' using 1:2 with linespoints title 'odsgd (ps)', '-' using 1:2 with linespoints title 'ssgd (ps)'
10 2.61889
1 15.3846
25 1.76784
100 1.34231
e
10 1.86435
1 3.34728
25 1.48314
100 1.2365
e
10 1.8272
1 5.03922
25 1.33391
100 1.05585
e
10 1.4686
1 1.28522
25 1.49907
100 1.34231
e
10 1.43427
1 1.05434
25 1.75571
100 1.33653
e
10 1
1 1
25 1
100 1
e
10 0.668443
1 0.406699
25 0.901208
100 1.02313
e
10 0.627207
1 0.38068
25 1.00468
100 1.34231
e
10 0.539749
1 0.324539
25 0.877245
100 1.34231
e
10 0.53522
1 0.323885
25 0.861259
100 1.34231
e
10 0.511785
1 0.376734
25 0.646175
100 0.868702
e
10 0.508804
1 0.323275
25 0.709121
100 0.938234
e
10 0.362222
1 0.22867
25 0.547857
100 1.09559
e
10 0.337328
1 0.202836
25 0.548219
100 1.34231
e
10 0.332764
1 0.226515
25 0.457178
100 0.71965
e
unset multiplot
