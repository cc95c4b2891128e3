set terminal pngcairo size 1000,600
set datafile separator ','
set key outside right
set output 'bench/delayed/results_full/cnn_2Gbps_ssgd_twobit_m0_lr0.2/accuracy_vs_time.png'
set title 'test accuracy vs training time (2Gbps,50us)'
set xlabel 'training seconds'
set ylabel 'test accuracy'
plot 'bench/delayed/results_full/cnn_2Gbps_ssgd_twobit_m0_lr0.2/acc_ssgd-twobit_2Gbps_50us.dat' using 1:2 with linespoints title 'ssgd+twobit', 'bench/delayed/results_full/cnn_2Gbps_ssgd_twobit_m0_lr0.2/acc_compute-only_2Gbps_50us.dat' using 1:2 with linespoints title 'compute-only'
set output 'bench/delayed/results_full/cnn_2Gbps_ssgd_twobit_m0_lr0.2/samples_per_s.png'
set title 'throughput (2Gbps,50us)'
set style fill solid 0.6
set boxwidth 0.7
set xtics rotate by -35
set xlabel ''
set ylabel 'samples/s'
unset key
plot 'bench/delayed/results_full/cnn_2Gbps_ssgd_twobit_m0_lr0.2/samples_per_s.dat' using 1:3:xtic(2) with boxes
