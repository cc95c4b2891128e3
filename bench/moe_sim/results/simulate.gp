set terminal pngcairo size 1120,500 noenhanced
set output '/work/main/bench/moe_sim/results/simulate.png'
set multiplot layout 1,2
set logscale x 2
set logscale y
set xlabel 'batch'
set ylabel 'decode tokens/s (simulated)'
set key below horizontal font ',9'
set grid
set title 'v100-pcie3'
plot '-' using 1:2 with linespoints title 'ondemand', '-' using 1:2 with linespoints title 'lru', '-' using 1:2 with linespoints title 'static-hot', '-' using 1:2 with linespoints title 'fiddler', '-' using 1:2 with linespoints title 'moe-infinity', '-' using 1:2 with linespoints title 'prescope', '-' using 1:2 with linespoints title 'prescope:speculate=0', '-' using 1:2 with linespoints title 'prescope-perfect', '-' using 1:2 with linespoints title 'oracle'
1 0.526356
4 0.781431
16 2.17612
64 8.4946
e
1 0.633767
4 0.781431
16 2.17612
64 8.4946
e
1 6.47945
4 6.75914
16 6.65217
64 6.25436
e
1 6.47945
4 6.75914
16 6.53991
64 9.33074
e
1 0.441932
4 0.87444
16 2.4544
64 9.17799
e
1 6.45825
4 7.20435
16 9.9133
64 11.4608
e
1 6.47945
4 7.21148
16 9.91118
64 11.4608
e
1 7.26003
4 7.77654
16 9.70498
64 11.5358
e
1 7.53992
4 8.59415
16 10.4046
64 11.5339
e
set title 'a100-pcie4'
plot '-' using 1:2 with linespoints title 'ondemand', '-' using 1:2 with linespoints title 'lru', '-' using 1:2 with linespoints title 'static-hot', '-' using 1:2 with linespoints title 'fiddler', '-' using 1:2 with linespoints title 'moe-infinity', '-' using 1:2 with linespoints title 'prescope', '-' using 1:2 with linespoints title 'prescope:speculate=0', '-' using 1:2 with linespoints title 'prescope-perfect', '-' using 1:2 with linespoints title 'oracle'
1 1.05045
4 1.56127
16 4.34859
64 16.9736
e
1 1.26435
4 1.56127
16 4.34859
64 16.9736
e
1 9.77457
4 10.1476
16 9.98098
64 9.38269
e
1 9.77457
4 10.1476
16 10.0865
64 17.7528
e
1 0.882966
4 1.74809
16 4.907
64 18.3492
e
1 9.73091
4 11.2571
16 16.2967
64 21.5789
e
1 9.73538
4 11.2574
16 16.3139
64 21.5789
e
1 11.5035
4 12.2668
16 15.8051
64 21.671
e
1 12.099
4 13.3478
16 16.9974
64 21.6809
e
unset multiplot
