set terminal pngcairo size 1000,600
set datafile separator ','
set key outside right
set output 'bench/delayed/results_full/fcnet_sweep/accuracy_vs_time.png'
set title 'test accuracy vs training time (1Gbps,50us)'
set xlabel 'training seconds'
set ylabel 'test accuracy'
plot 'bench/delayed/results_full/fcnet_sweep/acc_ssgd_1Gbps_50us.dat' using 1:2 with linespoints title 'ssgd', 'bench/delayed/results_full/fcnet_sweep/acc_ssdsgd_1Gbps_50us.dat' using 1:2 with linespoints title 'ssdsgd', 'bench/delayed/results_full/fcnet_sweep/acc_cdsgd-twobit_1Gbps_50us.dat' using 1:2 with linespoints title 'cdsgd+twobit', 'bench/delayed/results_full/fcnet_sweep/acc_compute-only_1Gbps_50us.dat' using 1:2 with linespoints title 'compute-only'
set output 'bench/delayed/results_full/fcnet_sweep/samples_per_s.png'
set title 'throughput (1Gbps,50us)'
set style fill solid 0.6
set boxwidth 0.7
set xtics rotate by -35
set xlabel ''
set ylabel 'samples/s'
unset key
plot 'bench/delayed/results_full/fcnet_sweep/samples_per_s.dat' using 1:3:xtic(2) with boxes
set output 'bench/delayed/results_full/fcnet_sweep/speedup_vs_bandwidth.png'
set title 'samples/s relative to ssgd'
set logscale x
set xlabel 'link bandwidth (Gbit/s)'
set ylabel 'speedup vs ssgd'
set key outside right
set xtics norotate
plot 'bench/delayed/results_full/fcnet_sweep/speedup_ssgd.dat' using 1:2 with linespoints title 'ssgd', 'bench/delayed/results_full/fcnet_sweep/speedup_ssdsgd.dat' using 1:2 with linespoints title 'ssdsgd', 'bench/delayed/results_full/fcnet_sweep/speedup_cdsgd_twobit.dat' using 1:2 with linespoints title 'cdsgd+twobit', 'bench/delayed/results_full/fcnet_sweep/speedup_compute-only.dat' using 1:2 with linespoints title 'compute-only'
